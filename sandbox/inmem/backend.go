package inmem

import (
	"context"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"sync"

	"github.com/runner-dev/runner/sandbox"
)

// Backend is a sandbox.Backend whose sandboxes live in this process's
// memory. It has every image and the runtime "inmem" only; nothing
// outlives the process, so Cleanup finds nothing; it cannot build images.
type Backend struct {
	// Exec answers the commands of every sandbox it starts; nil is Builtin.
	Exec ExecFunc
	// Fail, when set, is returned by Start instead of a sandbox.
	Fail error

	mu      sync.Mutex
	started []*Sandbox
	configs []sandbox.Config
}

var _ sandbox.Backend = (*Backend)(nil)

// Runtime is the only runtime of the in-memory backend.
const Runtime = "inmem"

// Start returns a running sandbox holding a copy of cfg.Workspace (modes,
// symlinks and .git included; sockets and devices skipped, as the Docker
// backend skips them). The rest of cfg is recorded, not applied: see
// Configs.
func (b *Backend) Start(ctx context.Context, cfg sandbox.Config) (sandbox.Sandbox, error) {
	if b.Fail != nil {
		return nil, b.Fail
	}
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	checked := cfg
	if checked.Image == "" {
		checked.Image = "none" // an in-memory sandbox runs no image
	}
	checked, err := checked.WithDefaults()
	if err != nil {
		return nil, err
	}
	if checked.Runtime != "" && checked.Runtime != Runtime {
		return nil, fmt.Errorf("start sandbox: runtime %q: %w: the in-memory backend has only %q", cfg.Runtime, sandbox.ErrRefused, Runtime)
	}
	s, err := New(Options{Exec: b.Exec})
	if err != nil {
		return nil, err
	}
	if cfg.Workspace != "" {
		if err := s.copyIn(cfg.Workspace); err != nil {
			return nil, fmt.Errorf("copy workspace into sandbox: %w", err)
		}
	}
	b.mu.Lock()
	b.started = append(b.started, s)
	b.configs = append(b.configs, cfg)
	b.mu.Unlock()
	return s, nil
}

// CheckImage accepts every image: an in-memory sandbox runs none.
func (b *Backend) CheckImage(ctx context.Context, ref string) error { return ctx.Err() }

// Cleanup finds nothing: in-memory sandboxes end with the process.
func (b *Backend) Cleanup(ctx context.Context, dryRun bool) (sandbox.CleanupReport, error) {
	return sandbox.CleanupReport{}, ctx.Err()
}

// RemoveRun closes the sandboxes of run runID still open.
func (b *Backend) RemoveRun(ctx context.Context, runID string) (sandbox.CleanupReport, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	var rep sandbox.CleanupReport
	for i, s := range b.started {
		if b.configs[i].RunID != runID || s.Closed() {
			continue
		}
		s.Close(ctx)
		rep.Removed = append(rep.Removed, sandbox.Leftover{Run: runID, Task: b.configs[i].TaskID, Why: "run " + runID + " ended"})
	}
	return rep, nil
}

// Build is not supported.
func (b *Backend) Build(context.Context, sandbox.BuildOptions) error { return sandbox.ErrUnsupported }

// Info names the backend and its one runtime.
func (b *Backend) Info(context.Context) (sandbox.Info, error) {
	return sandbox.Info{Kind: "inmem", Address: "memory", Runtimes: []string{Runtime}, DefaultRuntime: Runtime}, nil
}

// Close does nothing: the sandboxes live on until closed one by one.
func (b *Backend) Close() error { return nil }

// Started returns the sandboxes started so far, in order.
func (b *Backend) Started() []*Sandbox {
	b.mu.Lock()
	defer b.mu.Unlock()
	return append([]*Sandbox(nil), b.started...)
}

// Configs returns the configurations given to Start, in order.
func (b *Backend) Configs() []sandbox.Config {
	b.mu.Lock()
	defer b.mu.Unlock()
	return append([]sandbox.Config(nil), b.configs...)
}

// copyIn copies the host directory dir into the workspace.
func (s *Sandbox) copyIn(dir string) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	return filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		r, err := filepath.Rel(dir, p)
		if err != nil || r == "." {
			return err
		}
		r = filepath.ToSlash(r)
		info, err := d.Info()
		if err != nil {
			return err
		}
		switch {
		case d.IsDir():
			s.tree.nodes[r] = &node{kind: kindDir, perm: info.Mode().Perm()}
		case d.Type()&fs.ModeSymlink != 0:
			target, err := os.Readlink(p)
			if err != nil {
				return err
			}
			s.tree.nodes[r] = &node{kind: kindSymlink, perm: 0o777, target: target}
		case d.Type().IsRegular():
			data, err := os.ReadFile(p)
			if err != nil {
				return err
			}
			s.tree.nodes[r] = &node{kind: kindFile, perm: info.Mode().Perm(), data: data}
		}
		return nil
	})
}
