#!/usr/bin/env bash
# Measures runner's own overhead against the docker and git CLIs, in the
# same run on the same machine, and prints medians and ratios. See
# BENCHMARKS.md for what each group measures and for the published figures.
#
#   bench/run.sh [-n ROUNDS] [-o FILE] [-a] [GROUP...]
#   bench/run.sh -s FILE          (summarize an earlier output only)
#
# GROUPs: exec clone ready copyout commit batch tokens budget (default: all),
# and cpu (the model-bound batch's CPU per task, channel against exec per
# command; about 6 minutes a round, not in the default).
# Each round runs every selected group once, runner's sub-benchmarks beside
# their baselines, so that the noise of a shared machine falls on both; the
# summary takes the median of the rounds. The raw `go test -bench` output
# goes to FILE (default bench/results.out; -a appends to it), which
# benchstat also reads: benchstat -col /impl FILE.
#
# Needs Go, git, a Docker engine and busybox-static, as the tests do. The
# first run builds the fixture repositories under $TMPDIR/runner-bench
# (about a minute for the 50k-file one) and reuses them afterwards.
set -euo pipefail
cd "$(dirname "$0")/.."

rounds=5
out=bench/results.out
append=
summary_only=
while getopts n:o:as: opt; do
	case $opt in
	n) rounds=$OPTARG ;;
	o) out=$OPTARG ;;
	a) append=1 ;;
	s) summary_only=$OPTARG ;;
	*) sed -n '2,20p' "$0" >&2; exit 2 ;;
	esac
done
shift $((OPTIND - 1))

# summarize prints, for every benchmark, the median of each metric per
# implementation, and the ratio of runner's median time to each baseline's.
summarize() {
	awk '
	/^Benchmark/ {
		name = $1; sub(/-[0-9]+$/, "", name)
		n = split(name, parts, "/"); group = ""; impl = "-"
		for (i = 1; i <= n; i++) {
			if (parts[i] ~ /^impl=/) impl = substr(parts[i], 6)
			else group = group (group == "" ? "" : "/") parts[i]
		}
		for (i = 3; i + 1 <= NF; i += 2) print group, impl, $(i + 1), $i
	}' "$1" | sort -k1,1 -k2,2 -k3,3 -k4,4g | awk '
	function flush() {
		if (n) print key, (n % 2 ? v[(n + 1) / 2] : (v[n / 2] + v[n / 2 + 1]) / 2), n
		n = 0
	}
	{ k = $1 " " $2 " " $3; if (k != key) { flush(); key = k } v[++n] = $4 }
	END { flush() }' | awk '
	function dur(x) {
		if (x >= 1e9) return sprintf("%.2fs", x / 1e9)
		if (x >= 1e6) return sprintf("%.1fms", x / 1e6)
		return sprintf("%.0fµs", x / 1e3)
	}
	function num(x) { return x >= 100 ? sprintf("%.0f", x) : sprintf("%.3g", x) }
	{
		g = $1; i = $2; u = $3
		if (!(g in seen)) { seen[g] = 1; groups[++ng] = g }
		if (!((g, i) in iseen)) { iseen[g, i] = 1; impls[g, ++ni[g]] = i }
		med[g, i, u] = $4; cnt[g, i] = $5
		if (u != "ns/op" && !((g, u) in useen)) { useen[g, u] = 1; units[g, ++nu[g]] = u }
	}
	END {
		for (a = 1; a <= ng; a++) {
			g = groups[a]; print g
			for (b = 1; b <= ni[g]; b++) {
				i = impls[g, b]
				line = sprintf("  %-15s n=%-2d %9s", i, cnt[g, i], dur(med[g, i, "ns/op"]))
				for (c = 1; c <= nu[g]; c++) {
					u = units[g, c]
					if ((g, i, u) in med) line = line sprintf("  %s %s", num(med[g, i, u]), u)
				}
				if (i == "runner") {
					sep = "   runner/"
					for (d = 1; d <= ni[g]; d++) {
						o = impls[g, d]
						if (o == "runner" || med[g, o, "ns/op"] == 0) continue
						line = line sprintf("%s%s %.2fx", sep, o, med[g, i, "ns/op"] / med[g, o, "ns/op"])
						sep = ", runner/"
					}
				}
				print line
			}
		}
	}'
}

if [ -n "$summary_only" ]; then
	summarize "$summary_only"
	exit 0
fi

[ $# -gt 0 ] || set -- exec clone ready copyout commit batch tokens budget
bin=$(mktemp -d)
trap 'rm -rf "$bin"' EXIT
go test -c -o "$bin/sandbox.test" ./sandbox/docker
go test -c -o "$bin/bench.test" ./bench
go test -c -o "$bin/agent.test" ./agent

small='(0|100|1000)$'
large='(10000|50000)$'
# run_group runs one group once; its output is appended to $out.
run_group() {
	local t=(-test.run '^$' -test.count 1)
	case $1 in
	exec) (cd sandbox/docker && "$bin/sandbox.test" "${t[@]}" -test.bench '^BenchmarkExec$' -test.benchtime 20x) ;;
	clone) (cd bench && "$bin/bench.test" "${t[@]}" -test.bench '^BenchmarkClone$' -test.benchtime 3x) ;;
	ready | copyout | commit)
		local name
		case $1 in
		ready) name=BenchmarkSandboxReady ;;
		copyout) name=BenchmarkCopyOut ;;
		commit) name=BenchmarkCommit ;;
		esac
		(cd bench && "$bin/bench.test" "${t[@]}" -test.bench "^$name\$/^files=$small" -test.benchtime 3x)
		(cd bench && "$bin/bench.test" "${t[@]}" -test.bench "^$name\$/^files=$large" -test.benchtime 1x)
		;;
	batch) (cd bench && "$bin/bench.test" "${t[@]}" -test.bench '^BenchmarkBatch$' -test.benchtime 1x -test.timeout 3h) ;;
	cpu) (cd bench && "$bin/bench.test" "${t[@]}" -test.bench '^BenchmarkModelBoundCPU$' -test.benchtime 1x -test.timeout 1h) ;;
	tokens) (cd bench && "$bin/bench.test" "${t[@]}" -test.bench '^BenchmarkTokens$' -test.benchtime 1x) ;;
	budget)
		(cd agent && "$bin/agent.test" "${t[@]}" -test.bench '^BenchmarkCapShareAtExhaustion$' -test.benchtime 1x)
		(cd agent && "$bin/agent.test" "${t[@]}" -test.bench '^BenchmarkBoundCost$' -test.benchtime 10x)
		;;
	*) echo "unknown group $1" >&2; exit 2 ;;
	esac
}

[ -n "$append" ] || : >"$out"
for r in $(seq 1 "$rounds"); do
	# Every other round, runner and its baselines run in reverse order
	# (runImpls in bench/timing_test.go and BenchmarkExec read this).
	if [ $((r % 2)) -eq 0 ]; then
		export RUNNER_BENCH_REVERSE=1
	else
		unset RUNNER_BENCH_REVERSE
	fi
	for g in "$@"; do
		echo "== round $r/$rounds: $g" >&2
		run_group "$g" 2>&1 | tee -a "$out" | grep -E '^(Benchmark|--- FAIL|FAIL|panic|.*channel/exec)' >&2 || true
	done
done
echo >&2
summarize "$out"
if command -v go >/dev/null && go run golang.org/x/perf/cmd/benchstat@latest -col /impl "$out" 2>/dev/null >"$out.benchstat"; then
	echo "benchstat table: $out.benchstat" >&2
fi
