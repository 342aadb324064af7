package inmem

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"path"
	"sort"
	"strings"

	"github.com/runner-dev/runner/sandbox"
)

// ReadFile returns the content of a regular file. See sandbox.Sandbox.
func (s *Sandbox) ReadFile(ctx context.Context, p string) ([]byte, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if err := s.usable(); err != nil {
		return nil, err
	}
	if err := ctx.Err(); err != nil {
		return nil, errOp("read", p, err)
	}
	n, _, err := s.tree.existing(p)
	switch {
	case err != nil:
		return nil, errOp("read", p, err)
	case n.kind == kindDir:
		return nil, errOp("read", p, sandbox.ErrIsDir)
	case n.perm&ownerRead == 0:
		return nil, errOp("read", p, fs.ErrPermission)
	case len(n.data) > sandbox.MaxReadSize:
		return nil, fmt.Errorf("read %s: %w: %d bytes, the limit is %d; read it in parts with a command",
			p, sandbox.ErrTooLarge, len(n.data), sandbox.MaxReadSize)
	}
	return append([]byte(nil), n.data...), nil
}

// WriteFile writes data, creating the file and its parents. See
// sandbox.Sandbox.
func (s *Sandbox) WriteFile(ctx context.Context, p string, data []byte, mode fs.FileMode) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if err := s.usable(); err != nil {
		return err
	}
	if err := ctx.Err(); err != nil {
		return errOp("write", p, err)
	}
	return s.writeFile("write", p, data, mode)
}

// writeFile is WriteFile with mu held.
func (s *Sandbox) writeFile(op, p string, data []byte, mode fs.FileMode) error {
	r, err := rel(p)
	if err != nil {
		return errOp(op, p, err)
	}
	if r == "" {
		return errOp(op, p, sandbox.ErrIsDir)
	}
	dir, err := s.tree.mkdirAll(parent(r), 0o755)
	if err != nil {
		return errOp(op, p, err)
	}
	// The last component, through symlinks; a dangling one inside the
	// workspace gets its target created, in a directory that exists.
	n, real, err := s.tree.lookup(path.Join(dir, path.Base(r)), true)
	if err != nil {
		if errors.Is(err, sandbox.ErrNotDir) {
			err = sandbox.ErrNotFound
		}
		return errOp(op, p, err)
	}
	switch {
	case n == nil:
		if s.tree.nodes[parent(real)].perm&ownerWrite == 0 {
			return errOp(op, p, fs.ErrPermission)
		}
		if mode&fs.ModePerm == 0 {
			mode = 0o644
		}
		s.tree.nodes[real] = &node{kind: kindFile, perm: mode & fs.ModePerm, data: append([]byte(nil), data...)}
	case n.kind == kindDir:
		return errOp(op, p, sandbox.ErrIsDir)
	case n.perm&(ownerRead|ownerWrite) != ownerRead|ownerWrite:
		// The Docker backend opens the file for reading before it writes.
		return errOp(op, p, fs.ErrPermission)
	default:
		n.data = append([]byte(nil), data...)
		if mode&fs.ModePerm != 0 {
			n.perm = mode & fs.ModePerm
		}
	}
	return nil
}

// ListFiles lists dir. See sandbox.Sandbox.
func (s *Sandbox) ListFiles(ctx context.Context, dir string, recursive bool) ([]sandbox.FileInfo, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if err := s.usable(); err != nil {
		return nil, err
	}
	if err := ctx.Err(); err != nil {
		return nil, errOp("list", dir, err)
	}
	n, real, err := s.tree.existing(dir)
	switch {
	case err != nil:
		return nil, errOp("list", dir, err)
	case n.kind != kindDir:
		return nil, errOp("list", dir, sandbox.ErrNotDir)
	}
	// Entries are named under the path as given, as the Docker backend
	// names them, not under where its symlinks lead.
	shown, _ := rel(dir)
	var files []sandbox.FileInfo
	for k, e := range s.tree.nodes {
		sub, ok := strings.CutPrefix(k, real+"/")
		if real == "" {
			sub, ok = k, k != ""
		}
		if !ok {
			continue
		}
		parts := strings.Split(sub, "/")
		if !recursive && len(parts) > 1 {
			continue
		}
		if recursive && inDotGit(parts) {
			continue
		}
		fi := sandbox.FileInfo{Path: path.Join(shown, sub)}
		switch e.kind {
		case kindDir:
			fi.Type = fs.ModeDir
		case kindSymlink:
			fi.Type, fi.Size = fs.ModeSymlink, int64(len(e.target))
		default:
			fi.Size = int64(len(e.data))
		}
		files = append(files, fi)
	}
	sort.Slice(files, func(i, j int) bool { return files[i].Path < files[j].Path })
	return files, nil
}

// existing looks up p, symlinks followed, for an operation on something
// that must exist. A file on the way counts as nothing there: the Docker
// backend cannot tell the two apart.
func (t *tree) existing(p string) (*node, string, error) {
	n, real, err := t.lookup(p, true)
	switch {
	case errors.Is(err, sandbox.ErrNotDir):
		return nil, "", sandbox.ErrNotFound
	case err != nil:
		return nil, "", err
	case n == nil:
		return nil, "", sandbox.ErrNotFound
	}
	return n, real, nil
}

// inDotGit reports whether an entry lies inside a .git directory (not the
// directory itself), as find's -path '*/.git/*' sees it.
func inDotGit(parts []string) bool {
	for _, c := range parts[:len(parts)-1] {
		if c == ".git" {
			return true
		}
	}
	return false
}

// Symlink makes name (relative to the workspace) a symlink to target, as
// `ln -s target name` would in the sandbox. Parents must exist.
func (s *Sandbox) Symlink(target, name string) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if err := s.usable(); err != nil {
		return err
	}
	n, real, err := s.tree.lookup(name, false)
	switch {
	case err != nil:
		return errOp("symlink", name, err)
	case n != nil:
		return errOp("symlink", name, fs.ErrExist)
	case real == "":
		return errOp("symlink", name, sandbox.ErrIsDir)
	}
	s.tree.nodes[real] = &node{kind: kindSymlink, perm: 0o777, target: target}
	return nil
}

// Mkdir makes the directory name and its parents, as `mkdir -p` would.
func (s *Sandbox) Mkdir(name string) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if err := s.usable(); err != nil {
		return err
	}
	r, err := rel(name)
	if err != nil {
		return errOp("mkdir", name, err)
	}
	if _, err := s.tree.mkdirAll(r, 0o755); err != nil {
		return errOp("mkdir", name, err)
	}
	return nil
}

// Chmod sets the permission bits of name (symlinks followed).
func (s *Sandbox) Chmod(name string, perm fs.FileMode) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if err := s.usable(); err != nil {
		return err
	}
	n, _, err := s.tree.lookup(name, true)
	if err == nil && n == nil {
		err = sandbox.ErrNotFound
	}
	if err != nil {
		return errOp("chmod", name, err)
	}
	n.perm = perm & fs.ModePerm
	return nil
}

// Remove removes name and everything under it, as `rm -rf` would: a
// symlink is removed, not what it points to. Removing nothing is no error.
func (s *Sandbox) Remove(name string) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if err := s.usable(); err != nil {
		return err
	}
	n, real, err := s.tree.lookup(name, false)
	switch {
	case err != nil && !errors.Is(err, sandbox.ErrNotFound):
		return errOp("remove", name, err)
	case n == nil:
		return nil
	}
	s.tree.removeAll(real)
	return nil
}
