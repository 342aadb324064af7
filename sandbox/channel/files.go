package channel

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path"
	"sort"
	"strconv"
	"strings"

	"golang.org/x/sys/unix"

	"github.com/runner-dev/runner/sandbox"
)

// The file operations run in the helper, as the sandbox user, so the
// kernel's permission checks apply. They check what they opened, never a
// path: a descriptor's target as the kernel sees it (/proc/self/fd/N) must
// be inside the workspace, and a directory, once opened and checked, is
// where the next step happens (openat), whatever happens to the names that
// led there. A process of the sandbox swapping a directory for a symlink
// meanwhile can make an operation fail, never reach outside.

// openFlags are added to every open: no blocking on a FIFO, no terminal
// taken as controlling, nothing inherited by the commands.
const openFlags = unix.O_NONBLOCK | unix.O_NOCTTY | unix.O_CLOEXEC

// fdPath is where the kernel shows what descriptor fd is.
func fdPath(fd int) string { return "/proc/self/fd/" + strconv.Itoa(fd) }

// checkInside fails with ErrOutsideWorkspace unless descriptor fd is
// inside the workspace.
func checkInside(fd int, shown string) error {
	real, err := os.Readlink(fdPath(fd))
	if err != nil {
		return fmt.Errorf("%s: %w", shown, err)
	}
	if real != sandbox.Workdir && !strings.HasPrefix(real, sandbox.Workdir+"/") {
		return fmt.Errorf("%s: resolves to %s through a symlink: %w", shown, real, sandbox.ErrOutsideWorkspace)
	}
	return nil
}

// errnoError maps what a system call said to the sandbox package's errors.
func errnoError(op, p string, err error) error {
	switch {
	case errors.Is(err, unix.ENOENT), errors.Is(err, unix.ELOOP):
		return fmt.Errorf("%s %s: %w", op, p, sandbox.ErrNotFound)
	case errors.Is(err, unix.EACCES), errors.Is(err, unix.EPERM), errors.Is(err, unix.EROFS):
		return fmt.Errorf("%s %s: %w", op, p, fs.ErrPermission)
	case errors.Is(err, unix.EISDIR):
		return fmt.Errorf("%s %s: %w", op, p, sandbox.ErrIsDir)
	case errors.Is(err, unix.ENOTDIR):
		return fmt.Errorf("%s %s: %w", op, p, sandbox.ErrNotDir)
	}
	return fmt.Errorf("%s %s: %w", op, p, err)
}

// openChecked opens p (symlinks followed) and checks the file opened.
func openChecked(op, p string, flags int) (int, error) {
	fd, err := unix.Open(p, flags|openFlags, 0)
	if err != nil {
		return -1, errnoError(op, p, err)
	}
	if err := checkInside(fd, op+" "+p); err != nil {
		unix.Close(fd)
		return -1, err
	}
	return fd, nil
}

// readFile returns the content of the regular file abs.
func readFile(abs string) ([]byte, error) {
	fd, err := openChecked("read", abs, unix.O_RDONLY)
	if err != nil {
		if errors.Is(err, sandbox.ErrNotDir) {
			err = fmt.Errorf("read %s: %w", abs, sandbox.ErrNotFound)
		}
		return nil, err
	}
	f := os.NewFile(uintptr(fd), abs)
	defer f.Close()
	var st unix.Stat_t
	if err := unix.Fstat(fd, &st); err != nil {
		return nil, errnoError("read", abs, err)
	}
	if err := regular("read", abs, st.Mode); err != nil {
		return nil, err
	}
	if st.Size > sandbox.MaxReadSize {
		return nil, fmt.Errorf("read %s: %w: %d bytes, the limit is %d; read it in parts with a command", abs, sandbox.ErrTooLarge, st.Size, sandbox.MaxReadSize)
	}
	data, err := io.ReadAll(io.LimitReader(f, sandbox.MaxReadSize+1))
	if err != nil {
		return nil, errnoError("read", abs, err)
	}
	if len(data) > sandbox.MaxReadSize {
		return nil, fmt.Errorf("read %s: %w: it grew past the limit of %d bytes while being read", abs, sandbox.ErrTooLarge, sandbox.MaxReadSize)
	}
	return data, nil
}

// regular fails unless mode (a raw st_mode) is a regular file's.
func regular(op, p string, mode uint32) error {
	switch mode & unix.S_IFMT {
	case unix.S_IFREG:
		return nil
	case unix.S_IFDIR:
		return fmt.Errorf("%s %s: %w", op, p, sandbox.ErrIsDir)
	}
	return fmt.Errorf("%s %s: %w", op, p, sandbox.ErrNotRegular)
}

// maxHops bounds the dangling symlinks one write follows.
const maxHops = 8

// writeFile replaces the content of abs with data, creating the file and
// its missing parents. mode 0 keeps an existing file's mode (0644 for a
// new one).
func writeFile(abs string, data []byte, mode fs.FileMode) error {
	rel := strings.TrimPrefix(abs, sandbox.Workdir+"/")
	if abs == sandbox.Workdir || rel == abs {
		return fmt.Errorf("write %s: %w", abs, sandbox.ErrIsDir)
	}
	for hop := 0; ; hop++ {
		if hop == maxHops {
			return fmt.Errorf("write %s: too many levels of symbolic links: %w", abs, sandbox.ErrNotFound)
		}
		dir, base := path.Split(rel)
		dfd, err := enter(abs, strings.TrimSuffix(dir, "/"))
		if err != nil {
			return err
		}
		fd, created, err := openForWrite(dfd, abs, base)
		if err == errDangling {
			target, rerr := readlinkAt(dfd, base)
			unix.Close(dfd)
			if rerr != nil {
				return errnoError("write", abs, rerr)
			}
			if !path.IsAbs(target) {
				target = path.Join(sandbox.Workdir, dir, target)
			}
			target = path.Clean(target)
			if !strings.HasPrefix(target, sandbox.Workdir+"/") {
				return fmt.Errorf("write %s: resolves to %s through a symlink: %w", abs, target, sandbox.ErrOutsideWorkspace)
			}
			rel = strings.TrimPrefix(target, sandbox.Workdir+"/")
			continue
		}
		unix.Close(dfd)
		if err != nil {
			return err
		}
		return fill(fd, abs, data, mode, created)
	}
}

// errDangling is a name that is a symlink to nothing.
var errDangling = errors.New("dangling symlink")

// openForWrite opens base in directory dfd for writing: an existing
// regular file is opened for reading first (which creates nothing),
// checked, and only then opened again for writing through its descriptor;
// a new one is created with O_EXCL, which never follows a symlink.
func openForWrite(dfd int, abs, base string) (fd int, created bool, err error) {
	for try := 0; try < 8; try++ {
		rfd, err := unix.Openat(dfd, base, unix.O_RDONLY|openFlags, 0)
		if err == nil {
			defer unix.Close(rfd)
			if err := checkInside(rfd, "write "+abs); err != nil {
				return -1, false, err
			}
			var st unix.Stat_t
			if err := unix.Fstat(rfd, &st); err != nil {
				return -1, false, errnoError("write", abs, err)
			}
			if err := regular("write", abs, st.Mode); err != nil {
				return -1, false, err
			}
			wfd, err := unix.Open(fdPath(rfd), unix.O_WRONLY|openFlags, 0)
			if err != nil {
				return -1, false, errnoError("write", abs, err)
			}
			return wfd, false, nil
		}
		if !errors.Is(err, unix.ENOENT) {
			return -1, false, errnoError("write", abs, err)
		}
		var st unix.Stat_t
		if unix.Fstatat(dfd, base, &st, unix.AT_SYMLINK_NOFOLLOW) == nil {
			if st.Mode&unix.S_IFMT == unix.S_IFLNK {
				return -1, false, errDangling
			}
			continue // it appeared meanwhile
		}
		wfd, err := unix.Openat(dfd, base, unix.O_WRONLY|unix.O_CREAT|unix.O_EXCL|unix.O_NOFOLLOW|openFlags, 0o600)
		if err == nil {
			return wfd, true, nil
		}
		if !errors.Is(err, unix.EEXIST) {
			return -1, false, errnoError("write", abs, err)
		}
	}
	return -1, false, fmt.Errorf("write %s: the file kept changing while being opened; try again", abs)
}

// fill truncates and writes the file open on fd, then sets its mode.
func fill(fd int, abs string, data []byte, mode fs.FileMode, created bool) error {
	f := os.NewFile(uintptr(fd), abs)
	defer f.Close()
	if err := checkInside(fd, "write "+abs); err != nil {
		return err
	}
	var st unix.Stat_t
	if err := unix.Fstat(fd, &st); err != nil {
		return errnoError("write", abs, err)
	}
	perm := uint32(mode & fs.ModePerm)
	if perm == 0 {
		perm = st.Mode & 0o777
		if created {
			perm = 0o644
		}
	}
	if err := unix.Ftruncate(fd, 0); err != nil {
		return errnoError("write", abs, err)
	}
	if _, err := f.Write(data); err != nil {
		return errnoError("write", abs, err)
	}
	if st.Mode&0o777 != perm {
		if err := unix.Fchmod(fd, perm); err != nil {
			return errnoError("write", abs, err)
		}
	}
	return nil
}

// enter opens the directory dir (relative to the workspace, "" for the
// workspace itself), creating the directories that are missing, each
// checked once opened before anything is made in it.
func enter(abs, dir string) (int, error) {
	fd, err := openChecked("write", sandbox.Workdir, unix.O_RDONLY|unix.O_DIRECTORY)
	if err != nil {
		return -1, err
	}
	if dir == "" {
		return fd, nil
	}
	for _, c := range strings.Split(dir, "/") {
		if c == "" || c == "." {
			continue
		}
		if err := unix.Mkdirat(fd, c, 0o755); err != nil && !errors.Is(err, unix.EEXIST) {
			unix.Close(fd)
			if errors.Is(err, unix.ENOENT) {
				// A dangling symlink in the way: what mkdir -p says.
				return -1, fmt.Errorf("write %s: %w", abs, sandbox.ErrNotFound)
			}
			return -1, errnoError("write", abs, err)
		}
		next, err := unix.Openat(fd, c, unix.O_RDONLY|unix.O_DIRECTORY|openFlags, 0)
		unix.Close(fd)
		if err != nil {
			return -1, errnoError("write", abs, err)
		}
		if err := checkInside(next, "write "+abs); err != nil {
			unix.Close(next)
			return -1, err
		}
		fd = next
	}
	return fd, nil
}

// readlinkAt reads the symlink base in directory dfd.
func readlinkAt(dfd int, base string) (string, error) {
	buf := make([]byte, 4096)
	n, err := unix.Readlinkat(dfd, base, buf)
	if err != nil {
		return "", err
	}
	return string(buf[:n]), nil
}

// maxEntries bounds one listing.
const maxEntries = 1 << 20

// listFiles lists the directory abs, recursively if asked, without
// following symlinks below it and leaving out what .git directories hold.
func listFiles(abs string, recursive bool) ([]sandbox.FileInfo, error) {
	fd, err := openChecked("list", abs, unix.O_RDONLY|unix.O_DIRECTORY)
	if err != nil {
		return nil, err
	}
	shown := strings.TrimPrefix(strings.TrimPrefix(abs, sandbox.Workdir), "/")
	var files []sandbox.FileInfo
	if err := walk(fd, shown, recursive, &files); err != nil {
		return nil, fmt.Errorf("list %s: %w", abs, err)
	}
	sort.Slice(files, func(i, j int) bool { return files[i].Path < files[j].Path })
	return files, nil
}

// walk lists the directory open on fd (and closes it), naming entries
// under prefix.
func walk(fd int, prefix string, recursive bool, files *[]sandbox.FileInfo) error {
	d := os.NewFile(uintptr(fd), prefix)
	defer d.Close()
	names, err := d.Readdirnames(-1)
	if err != nil {
		return err
	}
	for _, name := range names {
		if len(*files) >= maxEntries {
			return errors.New("too many entries; list a subdirectory")
		}
		var st unix.Stat_t
		if unix.Fstatat(fd, name, &st, unix.AT_SYMLINK_NOFOLLOW) != nil {
			continue // gone meanwhile
		}
		p := path.Join(prefix, name)
		*files = append(*files, sandbox.FileInfo{Path: p, Type: fileType(st.Mode), Size: st.Size})
		if !recursive || st.Mode&unix.S_IFMT != unix.S_IFDIR || name == ".git" {
			continue
		}
		sub, err := unix.Openat(fd, name, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_NOFOLLOW|openFlags, 0)
		if err != nil {
			continue // unreadable, or swapped for something else meanwhile
		}
		if err := walk(sub, p, recursive, files); err != nil {
			return err
		}
	}
	return nil
}

// fileType converts the type bits of a raw st_mode.
func fileType(mode uint32) fs.FileMode {
	switch mode & unix.S_IFMT {
	case unix.S_IFDIR:
		return fs.ModeDir
	case unix.S_IFREG:
		return 0
	case unix.S_IFLNK:
		return fs.ModeSymlink
	case unix.S_IFIFO:
		return fs.ModeNamedPipe
	case unix.S_IFSOCK:
		return fs.ModeSocket
	case unix.S_IFCHR:
		return fs.ModeDevice | fs.ModeCharDevice
	}
	return fs.ModeDevice
}
