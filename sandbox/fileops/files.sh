# The sandbox's file helper (POSIX sh: dash, bash, busybox ash). It runs as
# the sandbox user, so the kernel's permission checks apply, and it checks
# what it actually opened rather than a path: a process of the sandbox may
# swap a directory for a symlink at any moment, so a path checked first and
# used afterwards could lead anywhere. The descriptor's target, as the kernel
# sees it (/proc/self/fd/N), must be inside the workspace WORK.
#
#   read WORK PATH MAX         writes the content of the regular file PATH
#                              (at most MAX+1 bytes) on stdout
#   write WORK PATH SIZE MODE  replaces the content of PATH with SIZE bytes
#                              read from stdin, creating it and its missing
#                              parent directories; MODE is octal, or "-" to
#                              keep the mode of an existing file (0644 for a
#                              new one). Prints nothing.
#   list WORK DIR DEPTH        lists DIR ("MODE_HEX SIZE NAME" lines), DEPTH
#                              1 or 0 (recursive)
#
# Exit codes: 2 not found, 13 permission denied, 16 the path kept changing
# while being opened, 18 outside the workspace (the resolved path is
# printed), 19 not a regular file, 20 not a directory, 21 is a directory,
# 27 too large (the size is printed), 74 the data did not arrive whole.
#
# Opening a FIFO blocks, so the type is checked before opening; one swapped
# in after the check leaves the open blocked until the runner's deadline for
# the operation, when the runner kills the helper.

work=$2

inside() {
	case "$1" in
	"$work" | "$work"/*) ;;
	*)
		printf '%s' "$1"
		exit 18
		;;
	esac
}

# opened N checks that descriptor N is a file inside the workspace and sets
# $type (the raw st_mode in hex), $size and $perm (octal) from it.
opened() {
	r=$(readlink "/proc/self/fd/$1") || exit 2
	case "$r" in *" (deleted)") exit 2 ;; esac
	inside "$r"
	r=$(stat -L -c '%f %s %a' "/proc/self/fd/$1") || exit 2
	set -- $r
	type=$1 size=$2 perm=$3
}

# regular fails unless $type is a regular file's.
regular() {
	case "$type" in
	8???) ;;
	4???) exit 21 ;;
	*) exit 19 ;;
	esac
}

# unopened explains why PATH could not be opened, from one look at it (a
# single stat, so that a file changing meanwhile cannot mix two states):
# missing, or not a regular file, or a symlink leading out. It returns when
# PATH is a regular file, setting $type: either it changed under the open,
# which is worth another try, or it cannot be read.
unopened() {
	type=$(stat -L -c %f -- "$1" 2>/dev/null) || exit 2
	r=$(readlink -f -- "$1") && inside "$r"
	regular
}

# enter DIR makes DIR (relative to the workspace, "" for the workspace
# itself) the current directory, creating the directories that are missing.
# After each step the current directory, as the kernel sees it, must be
# inside the workspace: from then on it is held, whatever happens to the
# names that led there, and nothing is created before it was checked.
enter() {
	cd -P -- "$work" || exit 13
	rest=$1
	while [ -n "$rest" ]; do
		c=${rest%%/*}
		case "$rest" in
		*/*) rest=${rest#*/} ;;
		*) rest= ;;
		esac
		if [ ! -e "$c" ] && [ ! -L "$c" ]; then
			mkdir -- "$c" 2>/dev/null || [ -d "$c" ] || exit 13
		fi
		if ! cd -P -- "$c" 2>/dev/null; then
			r=$(readlink -f -- "$c") && inside "$r"
			[ -e "$c" ] || exit 2
			[ -d "$c" ] || exit 20
			exit 13
		fi
		here=$(pwd -P) || exit 2
		inside "$here"
	done
}

case "$1" in
read)
	p=$3
	max=$4
	# A regular file that cannot be opened eight times running is unreadable,
	# or keeps vanishing.
	n=0
	while :; do
		if [ -f "$p" ] && command exec 3<"$p"; then
			break
		fi 2>/dev/null
		unopened "$p"
		n=$((n + 1))
		[ $n -lt 8 ] && continue
		# Eight misses: unreadable when it is there and access says so;
		# otherwise a name that keeps vanishing (renamed over and removed
		# meanwhile), which is not there to read.
		if [ -f "$p" ] && [ ! -r "$p" ]; then exit 13; fi
		exit 2
	done
	opened 3
	regular
	if [ "$size" -gt "$max" ]; then
		printf '%s' "$size"
		exit 27
	fi
	# A file that grows meanwhile is cut at MAX+1 bytes: too large.
	exec head -c $((max + 1)) <&3
	;;
write)
	rel=${3#"$work"/}
	want=$4
	mode=$5
	dir=
	case "$rel" in */*) dir=${rel%/*} ;; esac
	base=${rel##*/}
	n=0
	while :; do
		n=$((n + 1))
		[ $n -le 8 ] || exit 16
		enter "$dir"
		if [ -L "$base" ] && [ ! -e "$base" ]; then
			# A dangling symlink: its target, inside the workspace, is
			# created, as writing through the link would.
			r=$(readlink -f -- "$base") || exit 2
			inside "$r"
			rel=${r#"$work"/}
			dir=
			case "$rel" in */*) dir=${rel%/*} ;; esac
			base=${rel##*/}
			continue
		fi
		if [ -e "$base" ]; then
			# Opened for reading, which creates nothing, checked, and only
			# then opened again through the descriptor to be truncated.
			if [ -f "$base" ] && command exec 3<"$base"; then
				opened 3
				regular
				[ "$mode" = - ] && mode=$perm
				command exec 4>"/proc/self/fd/3" 2>/dev/null || exit 13
				break
			fi 2>/dev/null
			unopened "$base"
			[ $n -lt 8 ] || exit 13
			continue
		fi
		# A new file is created with O_EXCL (noclobber), which never
		# follows a symlink; a name that appears meanwhile sends the helper
		# round again.
		set -C
		if command exec 4>"$base"; then
			set +C
			[ "$mode" = - ] && mode=644
			break
		fi 2>/dev/null
		set +C
		[ -e "$base" ] || [ -L "$base" ] || exit 13
	done
	opened 4
	regular
	head -c "$want" >&4 || exit 74
	[ "$perm" = "$mode" ] || chmod "$mode" /proc/self/fd/4 || exit 13
	size=$(stat -L -c %s /proc/self/fd/4) || exit 74
	[ "$size" = "$want" ] || exit 74
	;;
list)
	[ -e "$3" ] || exit 2
	r=$(readlink -f -- "$3") || exit 2
	inside "$r"
	[ -d "$r" ] || exit 20
	cd -P -- "$r" 2>/dev/null || exit 13
	# The directory now held is the one listed: check it, not the name.
	here=$(pwd -P) || exit 2
	inside "$here"
	if [ "$4" = 1 ]; then
		find . -mindepth 1 -maxdepth 1 -exec stat -c '%f %s %n' -- {} +
	else
		find . -mindepth 1 -path '*/.git/*' -prune -o -exec stat -c '%f %s %n' -- {} +
	fi
	;;
*)
	exit 64
	;;
esac
