// Package inmem is a sandbox.Sandbox held in memory, for fast tests of the
// code that drives a sandbox (the agent, the batch runner) without an
// engine. It follows the contract of sandbox.Sandbox and the behaviour of
// the Docker backend where a caller can see it:
//
//   - paths: relative to sandbox.Workdir or absolute inside it; one that
//     leaves the workspace, lexically or through a symlink (absolute or
//     relative), is refused with sandbox.ErrOutsideWorkspace naming where
//     it leads; symlinks inside are followed; a write through a dangling
//     symlink inside creates its target;
//   - errors: sandbox.ErrNotFound, ErrIsDir, ErrNotDir, ErrTooLarge (over
//     sandbox.MaxReadSize), fs.ErrPermission from the owner's permission
//     bits (a file without 0400 cannot be read, one without 0200 cannot be
//     written, nothing can be created in a directory without 0200);
//   - ListFiles: sorted, relative to the workspace, symlinks not followed,
//     the contents of .git directories left out when recursive;
//   - Snapshot: a tar stream in the Docker backend's layout ("./",
//     "./dir/", "./file"; modes, symlinks; owned by 1000:1000), which
//     gitops.CommitTree accepts; afterwards every call but Snapshot and
//     Close fails with sandbox.ErrStopped;
//   - Checkpoint and Restore (sandbox.Checkpointer): a copy of the
//     workspace, put back whole;
//   - Close: idempotent; afterwards every call fails with sandbox.ErrClosed.
//
// It does not emulate: processes (Exec runs an ExecFunc, by default Builtin,
// a handful of commands), timeouts, resource limits, FIFOs and devices,
// hard links, owners other than the sandbox user, the execute (search) bit
// of directories, or what lies outside the workspace (a path that leads out
// is refused even where the Docker backend would report that nothing is
// there). Directory sizes in ListFiles are 0.
package inmem

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"sync"

	"github.com/runner-dev/runner/sandbox"
)

// ExecFunc answers one Exec call. It may read and change the workspace
// through sb's methods (WriteFile, Symlink, Mkdir, Chmod, Remove...).
type ExecFunc func(ctx context.Context, sb *Sandbox, cmd string, opt sandbox.ExecOptions) (sandbox.ExecResult, error)

// Options seed a sandbox.
type Options struct {
	// Files are regular files (mode 0644) to create, with their parents,
	// keyed by path relative to the workspace.
	Files map[string]string
	// Exec answers commands; nil is Builtin.
	Exec ExecFunc
}

// Sandbox is an in-memory sandbox.Sandbox. Its methods are safe for
// concurrent use.
type Sandbox struct {
	exec ExecFunc

	mu      sync.Mutex
	tree    tree
	saved   *tree // the checkpoint, if any
	ran     []string
	stopped bool
	closed  bool
}

var _ sandbox.Sandbox = (*Sandbox)(nil)

// New returns a running sandbox holding opt.Files.
func New(opt Options) (*Sandbox, error) {
	s := &Sandbox{exec: opt.Exec, tree: newTree()}
	if s.exec == nil {
		s.exec = Builtin
	}
	for p, body := range opt.Files {
		if err := s.writeFile("seed", p, []byte(body), 0o644); err != nil {
			return nil, fmt.Errorf("inmem: seed %s: %w", p, err)
		}
	}
	return s, nil
}

// usable fails when the sandbox takes no more calls. Called with mu held.
func (s *Sandbox) usable() error {
	switch {
	case s.closed:
		return sandbox.ErrClosed
	case s.stopped:
		return sandbox.ErrStopped
	}
	return nil
}

// Close ends the sandbox; the workspace is gone. It is idempotent.
func (s *Sandbox) Close(context.Context) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.closed = true
	s.tree = newTree()
	return nil
}

// Closed reports whether Close was called.
func (s *Sandbox) Closed() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.closed
}

// Stopped reports whether Snapshot was called.
func (s *Sandbox) Stopped() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.stopped
}

// Commands returns the commands given to Exec, in order.
func (s *Sandbox) Commands() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]string(nil), s.ran...)
}

// File returns the content of the regular file at p (relative to the
// workspace, symlinks followed), or "" when there is none. It is for
// assertions: it works in any state but closed.
func (s *Sandbox) File(p string) string {
	s.mu.Lock()
	defer s.mu.Unlock()
	n, _, err := s.tree.lookup(p, true)
	if err != nil || n == nil || n.kind != kindFile {
		return ""
	}
	return string(n.data)
}

// errOp wraps err with the operation and the path as the caller gave it,
// as the Docker backend does ("read src/a.go: no such file or directory").
func errOp(op, p string, err error) error {
	var out *outsideError
	if errors.As(err, &out) {
		return fmt.Errorf("%s %s: resolves to %s through a symlink: %w", op, p, out.real, sandbox.ErrOutsideWorkspace)
	}
	return fmt.Errorf("%s %s: %w", op, p, err)
}

// permission bits of the owner, the only user there is.
const (
	ownerRead  fs.FileMode = 0o400
	ownerWrite fs.FileMode = 0o200
)
