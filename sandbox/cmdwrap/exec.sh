# The sandbox's command wrapper (POSIX sh: dash, bash, busybox ash).
#
#   run MARK CMD   runs CMD with sh -c. Its environment holds RUNNER_EXEC=MARK,
#                  as the wrapper's does (the runner sets it on the exec). A
#                  watchdog waits on the wrapper's stdin, which the runner
#                  keeps open: when the runner closes it (at the timeout) or
#                  dies, the watchdog prints MARK:timeout on stderr and kills
#                  every process of CMD. If the kernel killed a process for
#                  memory meanwhile, the wrapper prints MARK:oom on stderr.
#                  Last, it prints MARK:exit:CODE on stderr: a reader whose
#                  stream a detached child keeps open learns from it that
#                  the command is over, and its exit code.
#   kill MARK      kills every process of the command marked MARK, wrapper
#                  and watchdog included.
#
# The processes of a command are found three ways: their environment holds
# RUNNER_EXEC=MARK, they are in a session led by such a process (the engine
# makes every exec a session leader; where it does not, CMD gets a session of
# its own from setsid), or they descend from one of those. Waiting and killing
# use shell builtins only: no program is started for a command that ends in
# time, and a timeout is enforced even when a fork loop has used up the pids
# limit.

mark=
root=
# spare: pids never killed (the wrapper and the watchdog, while it reaps).
spare=" "
# sids: sessions whose every process belongs to the command.
sids=" "

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
	leaders=$sids
	pairs=
	for d in /proc/[0-9]*; do
		p=${d#/proc/}
		case "$spare" in *" $p "*) continue ;; esac
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
			[ "$p" = "$4" ] && leaders="$leaders$p "
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
			case "$found$leaders" in
			*" $q "*) found="$found$p " changed=1 ;;
			*) case "$leaders" in *" $s "*) found="$found$p " changed=1 ;; esac ;;
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
	mark=$2
	cmd=$3
	oomkills
	oom0=$oom
	spare=" $$ "
	exec 3<&0 </dev/null
	read -r st <"/proc/$$/stat"
	st=${st##*) }
	set -- $st
	if [ "$4" = "$$" ]; then
		# The wrapper leads the exec's session, the command's too.
		sids=" $$ "
		sh -c "$cmd" 3<&- &
	elif command -v setsid >/dev/null 2>&1; then
		setsid sh -c "$cmd" 3<&- &
	else
		sh -c "$cmd" 3<&- &
	fi
	root=$!
	(
		# Until stdin ends, TERM (the command is over) ends the watchdog;
		# from then on the watchdog finishes its work. TERM is left to its
		# default action while the watchdog waits, never trapped: a shell
		# runs a trap only once its read returns, and a TERM that lands
		# just before the read blocks (busybox ash and dash both have that
		# window) would leave the watchdog, and so the command, waiting
		# for the timeout. The reader of the output may be gone by then
		# (the channel helper was killed): a write to it must not end the
		# watchdog before its work is done.
		trap '' PIPE
		read -r _ <&3
		# HUP too: when the command shares the wrapper's process group
		# (the wrapper leads the session), a HUP to that group must not end
		# the watchdog before its work is done. The command can send it
		# (kill -HUP 0 on its TERM), and gVisor sends it, with CONT, as
		# soon as reap stops a process of the group, which has no parent
		# outside the session.
		trap '' TERM HUP
		read -r me _ </proc/self/stat
		spare="$spare$me "
		printf '%s:timeout\n' "$mark" >&2
		reap
	) &
	w=$!
	# The wrapper waits for its watchdog through the same HUP (the command,
	# started before, keeps its own disposition).
	trap '' HUP
	exec 3<&-
	wait $root 2>/dev/null
	rc=$?
	oomkills
	[ "$oom" -gt "$oom0" ] && printf '%s:oom\n' "$mark" >&2
	kill -TERM $w 2>/dev/null
	# Quietly: some shells report a job that a signal ended.
	wait $w 2>/dev/null
	printf '%s:exit:%d\n' "$mark" "$rc" >&2
	exit $rc
	;;
esac
exit 2
