# The sandbox's file helper (POSIX sh), run as the sandbox user so that the
# kernel's permission checks apply. It resolves paths physically and refuses
# one that leaves the workspace WORK through a symlink.
#
#   stat WORK PATH      prints "MODE_HEX SIZE RESOLVED" for an existing path
#   prepare WORK PATH   creates the parent directories, checks the file can
#                       be written, prints "MODE_OCTAL RESOLVED" (MODE_OCTAL
#                       is "-" for a new file)
#   list WORK DIR DEPTH lists DIR ("MODE_HEX SIZE NAME" lines), DEPTH 1 or 0
# Exit codes: 2 not found, 13 permission denied, 18 outside the workspace
# (the resolved path is printed), 20 not a directory, 21 is a directory.

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

case "$1" in
stat)
	[ -e "$3" ] || exit 2
	r=$(readlink -f -- "$3") || exit 2
	inside "$r"
	[ -r "$r" ] || exit 13
	stat -c '%f %s ' -- "$r" | tr -d '\n'
	printf '%s' "$r"
	;;
prepare)
	d=$(dirname -- "$3")
	if [ ! -d "$d" ]; then
		# Check the deepest existing ancestor before creating anything.
		a=$d
		while [ ! -e "$a" ] && [ ! -L "$a" ]; do a=$(dirname -- "$a"); done
		r=$(readlink -f -- "$a") || exit 2
		inside "$r"
		mkdir -p -- "$d" 2>/dev/null || exit 13
	fi
	d=$(cd -P -- "$d" && pwd -P) || exit 13
	inside "$d"
	f="$d/$(basename -- "$3")"
	if [ -L "$f" ]; then
		f=$(readlink -f -- "$f") || exit 2
		inside "$f"
		mkdir -p -- "$(dirname -- "$f")" 2>/dev/null || exit 13
	fi
	[ -d "$f" ] && exit 21
	m=-
	if [ -e "$f" ]; then
		[ -w "$f" ] || exit 13
		m=$(stat -c %a -- "$f") || exit 13
	else
		[ -w "$(dirname -- "$f")" ] || exit 13
	fi
	printf '%s %s' "$m" "$f"
	;;
list)
	[ -e "$3" ] || exit 2
	r=$(readlink -f -- "$3") || exit 2
	inside "$r"
	[ -d "$r" ] || exit 20
	cd -- "$r" || exit 13
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
