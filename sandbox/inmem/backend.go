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

// Backend starts in-memory sandboxes; its Start method fits where a
// function starting a sandbox is expected (batch.Deps.StartSandbox).
type Backend struct {
	// Exec answers the commands of every sandbox it starts; nil is Builtin.
	Exec ExecFunc
	// Fail, when set, is returned by Start instead of a sandbox.
	Fail error

	mu      sync.Mutex
	started []*Sandbox
	configs []sandbox.Config
}

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
