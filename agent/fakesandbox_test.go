package agent

import (
	"context"
	"fmt"
	"io"
	"io/fs"
	"path"
	"sort"
	"strings"
	"sync"

	"github.com/runner-dev/runner/sandbox"
)

// memSandbox is an in-memory sandbox.Sandbox for unit tests: files in a map,
// commands answered by a function.
type memSandbox struct {
	mu    sync.Mutex
	files map[string][]byte
	modes map[string]fs.FileMode
	exec  func(cmd string) (sandbox.ExecResult, error)
	ran   []string
}

var _ sandbox.Sandbox = (*memSandbox)(nil)

func newMemSandbox(files map[string]string) *memSandbox {
	s := &memSandbox{files: map[string][]byte{}, modes: map[string]fs.FileMode{}}
	for p, c := range files {
		s.files[p] = []byte(c)
		s.modes[p] = 0o644
	}
	return s
}

func clean(p string) (string, error) {
	if path.IsAbs(p) {
		if p != sandbox.Workdir && !strings.HasPrefix(p, sandbox.Workdir+"/") {
			return "", fmt.Errorf("%s: %w", p, sandbox.ErrOutsideWorkspace)
		}
		p = strings.TrimPrefix(strings.TrimPrefix(p, sandbox.Workdir), "/")
	}
	if p = path.Clean(p); p == "." {
		p = ""
	}
	if p == ".." || strings.HasPrefix(p, "../") {
		return "", fmt.Errorf("%s: %w", p, sandbox.ErrOutsideWorkspace)
	}
	return p, nil
}

func (s *memSandbox) Exec(ctx context.Context, cmd string, opt sandbox.ExecOptions) (sandbox.ExecResult, error) {
	s.mu.Lock()
	s.ran = append(s.ran, cmd)
	fn := s.exec
	s.mu.Unlock()
	if err := ctx.Err(); err != nil {
		return sandbox.ExecResult{}, err
	}
	if fn == nil {
		return sandbox.ExecResult{Output: "ran: " + cmd + "\n", Stdout: "ran: " + cmd + "\n"}, nil
	}
	return fn(cmd)
}

func (s *memSandbox) ReadFile(_ context.Context, p string) ([]byte, error) {
	p, err := clean(p)
	if err != nil {
		return nil, err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	b, ok := s.files[p]
	if !ok {
		for f := range s.files {
			if strings.HasPrefix(f, p+"/") {
				return nil, fmt.Errorf("read %s: %w", p, sandbox.ErrIsDir)
			}
		}
		return nil, fmt.Errorf("read %s: %w", p, sandbox.ErrNotFound)
	}
	return append([]byte(nil), b...), nil
}

func (s *memSandbox) WriteFile(_ context.Context, p string, data []byte, mode fs.FileMode) error {
	p, err := clean(p)
	if err != nil {
		return err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if mode == 0 {
		mode = 0o644
		if old, ok := s.modes[p]; ok {
			mode = old
		}
	}
	s.files[p] = append([]byte(nil), data...)
	s.modes[p] = mode
	return nil
}

func (s *memSandbox) ListFiles(_ context.Context, dir string, recursive bool) ([]sandbox.FileInfo, error) {
	dir, err := clean(dir)
	if err != nil {
		return nil, err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	seen := map[string]sandbox.FileInfo{}
	for f, b := range s.files {
		rel := f
		if dir != "" {
			if !strings.HasPrefix(f, dir+"/") {
				continue
			}
			rel = strings.TrimPrefix(f, dir+"/")
		}
		parts := strings.Split(rel, "/")
		for i := range parts {
			if !recursive && i > 0 {
				break
			}
			name := path.Join(dir, strings.Join(parts[:i+1], "/"))
			if i < len(parts)-1 {
				seen[name] = sandbox.FileInfo{Path: name, Type: fs.ModeDir}
			} else {
				seen[name] = sandbox.FileInfo{Path: name, Size: int64(len(b))}
			}
		}
	}
	var out []sandbox.FileInfo
	for _, f := range seen {
		out = append(out, f)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Path < out[j].Path })
	return out, nil
}

func (s *memSandbox) Snapshot(context.Context) (io.ReadCloser, error) {
	return nil, fmt.Errorf("memSandbox has no snapshot")
}

func (s *memSandbox) Close(context.Context) error { return nil }

func (s *memSandbox) file(p string) string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return string(s.files[p])
}

func (s *memSandbox) commands() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]string(nil), s.ran...)
}
