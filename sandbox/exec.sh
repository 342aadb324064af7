# The sandbox's command wrapper (POSIX sh: dash, bash, busybox ash).
#
#   run TIMEOUT MARK CMD   runs CMD with sh -c in a session of its own; after
#                          TIMEOUT seconds (0: never) it prints MARK:timeout on
#                          stderr and kills every process of CMD. If the kernel
#                          killed a process for memory meanwhile, it prints
#                          MARK:oom on stderr at the end.
#   kill MARK              kills every process of the command marked MARK.
#
# The processes of a command are found three ways: their environment holds
# RUNNER_EXEC=MARK, they are in the command's session, or they descend from
# one of those. Killing uses shell builtins only, so it works even when a
# fork loop has used up the pids limit.

mark=
root=

# oomkills sets $oom to the sandbox's count of processes killed for memory
# (cgroup v2 or v1), 0 if the count cannot be read. Builtins only.
oomkills() {
	oom=0
	for f in /sys/fs/cgroup/memory.events /sys/fs/cgroup/memory/memory.oom_control; do
		[ -r "$f" ] || continue
		while read -r k v; do
			[ "$k" = oom_kill ] && oom=$v
		done <"$f"
		return
	done
}

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
	oomkills
	oom0=$oom
	if command -v setsid >/dev/null 2>&1; then
		RUNNER_EXEC=$mark setsid sh -c "$4" </dev/null &
	else
		RUNNER_EXEC=$mark sh -c "$4" </dev/null &
	fi
	root=$!
	w=
	if [ "$t" -gt 0 ]; then
		# When the command ends first, TERM ends the watchdog and its timer
		# wherever they are. Until the timer starts, $! is still the
		# command's, inherited, and there is nothing to stop; from then on
		# it is the timer's, stopped with KILL, which it cannot miss even
		# before it has become sleep. The timer holds none of the command's
		# output, so nothing could keep that open anyway.
		(
			trap '[ "$!" = "$root" ] || kill -KILL $! 2>/dev/null; exit 0' TERM
			sleep "$t" </dev/null >/dev/null 2>&1 &
			wait $!
			trap '' TERM
			printf '%s:timeout\n' "$mark" >&2
			reap
		) &
		w=$!
	fi
	wait $root
	rc=$?
	oomkills
	[ "$oom" -gt "$oom0" ] && printf '%s:oom\n' "$mark" >&2
	if [ -n "$w" ]; then
		kill -TERM $w 2>/dev/null
		# Quietly: some shells report a job that a signal ended.
		wait $w 2>/dev/null
	fi
	exit $rc
	;;
esac
exit 2
