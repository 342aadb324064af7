package channel

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"path"
	"strconv"
	"syscall"
	"time"

	"golang.org/x/sys/unix"

	"github.com/runner-dev/runner/sandbox"
)

// freezeTimeout bounds freezeOthers: a process that does not stop by then
// (one of another user, one stuck in the kernel) makes the snapshot the
// engine's.
const freezeTimeout = 5 * time.Second

// freezeOthers stops every process of the sandbox but the helper and PID
// 1, and returns once every thread of them is stopped (or a zombie), so
// that nothing changes the workspace while it is copied. kill(-1, SIGSTOP)
// reaches every process the sandbox user may signal, its own, but the
// caller and the namespace's init; a fork racing it is undone by the
// kernel (the parent's pending stop restarts it), and each pass stops
// whatever a previous one missed. Stopped, not killed: a process of the
// sandbox's life (PID 1's sleep, whose end stops the container and with it
// the memory-backed workspace) stays, and Close kills them all.
func freezeOthers(ctx context.Context) error {
	deadline := time.Now().Add(freezeTimeout)
	for {
		if err := syscall.Kill(-1, syscall.SIGSTOP); err != nil && err != syscall.ESRCH {
			return fmt.Errorf("freeze: %w", err)
		}
		running, err := runningThread()
		if err != nil {
			return err
		}
		if running == "" {
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("freeze: %s is still running after %s", running, freezeTimeout)
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(time.Millisecond):
		}
	}
}

// runningThread names a thread of the sandbox, but the helper's and PID
// 1's, that is neither stopped nor a zombie, or "" when there is none.
func runningThread() (string, error) {
	ents, err := os.ReadDir("/proc")
	if err != nil {
		return "", fmt.Errorf("freeze: %w", err)
	}
	self := strconv.Itoa(os.Getpid())
	for _, e := range ents {
		pid := e.Name()
		if _, err := strconv.Atoi(pid); err != nil || pid == self || pid == "1" {
			continue
		}
		tasks, err := os.ReadDir("/proc/" + pid + "/task")
		if err != nil {
			continue // gone
		}
		for _, t := range tasks {
			b, err := os.ReadFile("/proc/" + pid + "/task/" + t.Name() + "/stat")
			if err != nil {
				continue
			}
			// pid (comm) state ...: comm may hold anything.
			i := bytes.LastIndexByte(b, ')')
			if i < 0 || i+2 >= len(b) {
				continue
			}
			switch b[i+2] {
			case 'T', 't', 'Z', 'X', 'x':
			default:
				return "process " + pid + " (thread " + t.Name() + ")", nil
			}
		}
	}
	return "", nil
}

// modeFix is a mode makeReadable changed: the entry's name in the tar
// ("./" for the workspace, "./a/b" below it) and its mode before.
type modeFix struct {
	name string
	mode uint32
}

// makeReadable gives every directory of the workspace that the sandbox
// user owns and cannot list or enter its owner's read and search
// permission, and every regular file it owns and cannot read its owner's
// read permission, as the root that copies a workspace out of the engine
// reads them anyway; restoreModes puts them back. An entry of another
// user that the sandbox user cannot read fails it. Nothing runs meanwhile
// (see freezeOthers), so nothing is swapped under it. The changes are
// listed in the order made, parents before their entries.
func makeReadable(ctx context.Context) ([]modeFix, error) {
	uid := uint32(os.Getuid())
	var fixes []modeFix
	var root unix.Stat_t
	if err := unix.Lstat(sandbox.Workdir, &root); err != nil {
		return nil, fmt.Errorf("tar: %w", err)
	}
	if root.Mode&unix.S_IFMT == unix.S_IFDIR && root.Uid == uid && root.Mode&0o500 != 0o500 {
		if err := unix.Chmod(sandbox.Workdir, root.Mode&0o7777|0o500); err != nil {
			return nil, fmt.Errorf("tar: %s: %w", sandbox.Workdir, err)
		}
		fixes = append(fixes, modeFix{"./", root.Mode & 0o7777})
	}
	fd, err := openChecked("tar", sandbox.Workdir, unix.O_RDONLY|unix.O_DIRECTORY)
	if err != nil {
		return fixes, err
	}
	return readableDir(ctx, fd, ".", uid, fixes)
}

// readableDir is makeReadable below the directory open on fd (which it
// closes).
func readableDir(ctx context.Context, fd int, prefix string, uid uint32, fixes []modeFix) ([]modeFix, error) {
	d := os.NewFile(uintptr(fd), prefix)
	defer d.Close()
	names, err := d.Readdirnames(-1)
	if err != nil {
		return fixes, fmt.Errorf("tar: list %s: %w", prefix, err)
	}
	for _, name := range names {
		if err := ctx.Err(); err != nil {
			return fixes, err
		}
		p := path.Join(prefix, name)
		var st unix.Stat_t
		if err := unix.Fstatat(fd, name, &st, unix.AT_SYMLINK_NOFOLLOW); err != nil {
			return fixes, fmt.Errorf("tar: %s: %w", p, err)
		}
		typ := st.Mode & unix.S_IFMT
		need, access := uint32(0o400), uint32(unix.R_OK)
		switch typ {
		case unix.S_IFDIR:
			need, access = 0o500, unix.R_OK|unix.X_OK
		case unix.S_IFREG:
		default:
			continue // symlinks, named pipes, devices: their entry holds no content
		}
		if st.Uid == uid && st.Mode&need != need {
			if err := unix.Fchmodat(fd, name, st.Mode&0o7777|need, 0); err != nil {
				return fixes, fmt.Errorf("tar: %s: %w", p, err)
			}
			fixes = append(fixes, modeFix{"./" + p, st.Mode & 0o7777})
		} else if err := unix.Faccessat(fd, name, access, 0); err != nil {
			return fixes, fmt.Errorf("tar: %s (owner %d, mode %o): %w", p, st.Uid, st.Mode&0o7777, err)
		}
		if typ != unix.S_IFDIR {
			continue
		}
		sub, err := unix.Openat(fd, name, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_NOFOLLOW|openFlags, 0)
		if err != nil {
			return fixes, fmt.Errorf("tar: %s: %w", p, err)
		}
		if fixes, err = readableDir(ctx, sub, p, uid, fixes); err != nil {
			return fixes, err
		}
	}
	return fixes, nil
}

// restoreModes undoes makeReadable's changes, entries before their
// parents, so that a snapshot leaves the workspace as it found it.
func restoreModes(fixes []modeFix) {
	for i := len(fixes) - 1; i >= 0; i-- {
		unix.Chmod(path.Join(sandbox.Workdir, fixes[i].name), fixes[i].mode)
	}
}
