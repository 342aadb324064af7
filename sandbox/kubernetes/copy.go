package kubernetes

import (
	"context"
	"fmt"
	"io"
	"strings"
	"sync"
	"time"

	"github.com/runner-dev/runner/internal/panics"
	"github.com/runner-dev/runner/sandbox"
	"github.com/runner-dev/runner/sandbox/fileops"
)

// copyTimeout bounds the copy of the workspace in.
const copyTimeout = 10 * time.Minute

// copyIn copies the host directory dir into Workdir, owned by the sandbox
// user: a tar stream (fileops.WriteWorkspaceTar) on the stdin of the
// image's tar, in one exec.
func (s *Sandbox) copyIn(ctx context.Context, dir string) error {
	ctx, cancel := context.WithTimeout(ctx, copyTimeout)
	defer cancel()
	pr, pw := io.Pipe()
	go func() {
		var err error
		defer func() { pw.CloseWithError(err) }()
		defer panics.Catch(ctx, &err)
		err = fileops.WriteWorkspaceTar(pw, dir, sandbox.UID, sandbox.GID, fileops.TarLayout{})
	}()
	defer pr.Close()
	var out tail
	code, err := s.stream(ctx, s.command(sandbox.Workdir, nil, "tar", "-xf", "-", "-C", sandbox.Workdir), pr, &out, &out)
	if err != nil {
		return s.execError(ctx, "copy workspace into sandbox", err)
	}
	if code != 0 {
		err := fmt.Errorf("copy workspace into sandbox: tar exit code %d: %s", code, strings.TrimSpace(out.String()))
		if s.cfg.Disk > 0 && strings.Contains(out.String(), "No space left on device") {
			err = fmt.Errorf("%w (the workspace does not fit in the sandbox's disk limit of %d MiB: raise limits.disk, or set it to off)", err, s.cfg.Disk>>20)
		}
		return err
	}
	return nil
}

// Snapshot returns the workspace as a tar stream, taken when no process of
// the sandbox user can still write: from its call on, Exec is refused, and
// every process of the sandbox but PID 1 (the sleep that keeps the pod) is
// killed, until /proc shows none. The tar is made by the image's tar.
func (s *Sandbox) Snapshot(ctx context.Context) (io.ReadCloser, error) {
	s.mu.Lock()
	closed := s.closed
	s.stopped = true
	s.mu.Unlock()
	if closed {
		return nil, sandbox.ErrClosed
	}
	// The freeze kills the channel's helper too: the sandbox stops, so
	// that end is no fallback to tell anyone about. (The helper's own tar
	// is not used: it gives the workspace's root entry no owner or mode,
	// and no entry its time.)
	s.closeChannel()
	var out tail
	code, err := s.stream(ctx, s.command(sandbox.Workdir, nil, "sh", "-c", freezeScript), nil, &out, &out)
	if err != nil {
		return nil, fmt.Errorf("snapshot: %w", s.execError(ctx, "stop the sandbox's processes", err))
	}
	if code != 0 {
		return nil, fmt.Errorf("snapshot: stop the sandbox's processes: exit code %d: %s", code, strings.TrimSpace(out.String()))
	}
	pr, pw := io.Pipe()
	go func() {
		var errOut tail
		code, err := s.stream(context.WithoutCancel(ctx), s.command(sandbox.Workdir, nil, "sh", "-c", readableTarScript), nil, pw, &errOut)
		switch {
		case err != nil:
			err = fmt.Errorf("snapshot: %w", s.execError(ctx, "copy workspace out", err))
		case code != 0:
			err = fmt.Errorf("snapshot: tar exit code %d: %s", code, strings.TrimSpace(errOut.String()))
		}
		pw.CloseWithError(err)
	}()
	return pr, nil
}

// readableTarScript writes the workspace as a tar on stdout. tar runs as
// the sandbox user, not as root as the Docker engine's copy does, so a
// file or directory the agent made unreadable to its owner would fail the
// whole snapshot: every entry is first given back its owner's read (and,
// for directories, search) permission, which git does not record; the
// executable bits are left as they are. No process runs any more.
const readableTarScript = `find . -type d ! -perm -u=rx -exec chmod u+rx {} \; 2>/dev/null
find . ! -type l ! -type d ! -perm -u=r -exec chmod u+r {} + 2>/dev/null
exec tar -cf - .`

// freezeScript kills every process but PID 1 and itself, as the sandbox
// user (kill -1 spares PID 1 and the caller), until /proc shows none alive:
// a fork loop cannot outrun it, since each pass kills all it finds.
// Builtins only, so that it needs no fork of its own.
const freezeScript = `n=0
while :; do
	kill -KILL -1 2>/dev/null
	alive=0
	for d in /proc/[0-9]*; do
		p=${d#/proc/}
		[ "$p" = 1 ] || [ "$p" = "$$" ] && continue
		read -r st 2>/dev/null <"$d/stat" || continue
		st=${st##*) }
		case "$st" in Z*) continue ;; esac
		alive=1
		break
	done
	[ "$alive" = 0 ] && exit 0
	n=$((n + 1))
	[ "$n" -lt 2000 ] || { echo "processes survive kill -KILL -1" >&2; exit 1; }
done`

// tail keeps the last 4 KiB written to it, for messages. It may serve as
// both stdout and stderr of one stream, which client-go copies from two
// goroutines.
type tail struct {
	mu sync.Mutex
	b  []byte
}

func (t *tail) Write(p []byte) (int, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.b = append(t.b, p...)
	if len(t.b) > 4<<10 {
		t.b = t.b[len(t.b)-4<<10:]
	}
	return len(p), nil
}

func (t *tail) String() string {
	t.mu.Lock()
	defer t.mu.Unlock()
	return string(t.b)
}

// Checkpoint copies the workspace aside inside the sandbox (see
// fileops.CheckpointScript).
func (s *Sandbox) Checkpoint(ctx context.Context) error { return fileops.Checkpoint(ctx, s) }

// Restore puts the checkpoint back over the workspace.
func (s *Sandbox) Restore(ctx context.Context) error { return fileops.Restore(ctx, s) }
