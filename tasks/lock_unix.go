//go:build linux || darwin || freebsd || netbsd || openbsd || dragonfly

package tasks

import (
	"errors"
	"fmt"
	"io"
	"os"
	"strconv"
	"strings"
	"syscall"
)

// lockFile takes an exclusive, non-blocking flock on path and writes this
// process's pid into it. The lock is released when the returned file is
// closed, or by the kernel when the process dies, so a crash leaves no stale
// lock. The file itself is never removed: removing it would let a second run
// lock a new file while a first still holds the old one.
func lockFile(path string) (*os.File, error) {
	f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE, 0o644)
	if err != nil {
		return nil, fmt.Errorf("open lock file: %w", err)
	}
	if err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB); err != nil {
		defer f.Close()
		if errors.Is(err, syscall.EWOULDBLOCK) {
			return nil, &LockedError{Path: path, PID: readPID(f)}
		}
		return nil, fmt.Errorf("lock %s: %w", path, err)
	}
	pid := []byte(strconv.Itoa(os.Getpid()) + "\n")
	if err := f.Truncate(0); err != nil {
		f.Close()
		return nil, fmt.Errorf("write lock file: %w", err)
	}
	if _, err := f.WriteAt(pid, 0); err != nil {
		f.Close()
		return nil, fmt.Errorf("write lock file: %w", err)
	}
	return f, nil
}

// readPID returns the pid written in a lock file, or 0 if there is none.
func readPID(f *os.File) int {
	b, err := io.ReadAll(io.NewSectionReader(f, 0, 32))
	if err != nil {
		return 0
	}
	pid, err := strconv.Atoi(strings.TrimSpace(string(b)))
	if err != nil {
		return 0
	}
	return pid
}
