# The sandbox's command wrapper (POSIX sh: dash, bash, busybox ash).
#
#   run TIMEOUT MARK CMD   runs CMD with sh -c in a session of its own; after
#                          TIMEOUT seconds (0: never) it prints MARK on stderr
#                          and kills every process of CMD.
#   kill MARK              kills every process of the command marked MARK.
#
# The processes of a command are found three ways: their environment holds
# RUNNER_EXEC=MARK, they are in the command's session, or they descend from
# one of those. Killing uses shell builtins only, so it works even when a
# fork loop has used up the pids limit.

mark=
root=

# targets sets $found to the live processes of the command.
targets() {
	found=
	sids=" "
	pairs=
	for d in /proc/[0-9]*; do
		p=${d#/proc/}
		read -r st 2>/dev/null <"$d/stat" || continue
		st=${st##*) }
		# st: state ppid pgrp session ...
		set -- $st
		[ "$1" = Z ] && continue
		pairs="$pairs $p:$2:$4"
		# Not grep -F: busybox's stops at the first NUL of the file. The
		# mark is letters, digits and dashes, so it is a literal regex.
		if [ "$p" = "$root" ] || grep -q "RUNNER_EXEC=$mark" "$d/environ" 2>/dev/null; then
			found="$found $p"
			[ "$p" = "$4" ] && sids="$sids$p "
		fi
	done
	found="$found "
	changed=1
	while [ $changed = 1 ]; do
		changed=0
		for t in $pairs; do
			p=${t%%:*}
			t=${t#*:}
			q=${t%%:*}
			s=${t#*:}
			case "$found" in *" $p "*) continue ;; esac
			case "$found$sids" in
			*" $q "*) found="$found$p " changed=1 ;;
			*) case "$sids" in *" $s "*) found="$found$p " changed=1 ;; esac ;;
			esac
		done
	done
	found=${found# }
	found=${found% }
}

# reap asks the command's processes to stop, then kills whatever is left.
reap() {
	targets
	[ -z "$found" ] && return 0
	kill -TERM $found 2>/dev/null
	sleep 1 2>/dev/null
	n=0
	while [ $n -lt 200 ]; do
		targets
		[ -z "$found" ] && return 0
		kill -STOP $found 2>/dev/null
		targets
		kill -KILL $found 2>/dev/null
		n=$((n + 1))
	done
}

case "$1" in
kill)
	mark=$2
	reap
	exit 0
	;;
run)
	t=$2
	mark=$3
	if command -v setsid >/dev/null 2>&1; then
		RUNNER_EXEC=$mark setsid sh -c "$4" </dev/null &
	else
		RUNNER_EXEC=$mark sh -c "$4" </dev/null &
	fi
	root=$!
	w=
	if [ "$t" -gt 0 ]; then
		(
			sleep "$t" &
			s=$!
			trap 'kill $s 2>/dev/null; exit 0' TERM
			wait $s
			trap '' TERM
			printf '%s\n' "$mark" >&2
			reap
		) &
		w=$!
	fi
	wait $root
	rc=$?
	if [ -n "$w" ]; then
		kill -TERM $w 2>/dev/null
		wait $w
	fi
	exit $rc
	;;
esac
exit 2
