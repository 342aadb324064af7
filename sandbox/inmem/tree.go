package inmem

import (
	"io/fs"
	"path"
	"strings"

	"github.com/runner-dev/runner/sandbox"
)

type kind uint8

const (
	kindDir kind = iota + 1
	kindFile
	kindSymlink
)

// node is one entry of the workspace.
type node struct {
	kind   kind
	perm   fs.FileMode // permission bits; 0777 for a symlink
	data   []byte      // a file's content
	target string      // a symlink's target, as written
}

// tree is the workspace: nodes keyed by their clean path relative to the
// workspace, "" for the workspace itself.
type tree struct{ nodes map[string]*node }

func newTree() tree {
	return tree{nodes: map[string]*node{"": {kind: kindDir, perm: 0o755}}}
}

// maxHops is how many symlinks one lookup follows, as Linux does.
const maxHops = 40

// outsideError is a lookup that led out of the workspace, to real.
type outsideError struct{ real string }

func (e *outsideError) Error() string { return "resolves to " + e.real }
func (e *outsideError) Unwrap() error { return sandbox.ErrOutsideWorkspace }

// rel turns a path as callers give it (relative to the workspace, or
// absolute inside it) into a clean relative one, refusing paths that leave
// the workspace lexically, as the Docker backend does before anything runs.
func rel(p string) (string, error) {
	if p == "" || p == "." {
		return "", nil
	}
	abs := path.Clean(p)
	if !path.IsAbs(p) {
		abs = path.Join(sandbox.Workdir, p)
	}
	if abs == sandbox.Workdir {
		return "", nil
	}
	if !strings.HasPrefix(abs, sandbox.Workdir+"/") {
		return "", sandbox.ErrOutsideWorkspace
	}
	return strings.TrimPrefix(abs, sandbox.Workdir+"/"), nil
}

// lookup resolves p (as callers give it) component by component, following
// symlinks, the last one only if followLast. It returns the node and its
// real path; a missing last component gives a nil node and the path where
// it would be. A missing directory on the way is sandbox.ErrNotFound, a
// file on the way sandbox.ErrNotDir, a way out of the workspace an
// *outsideError, too many symlinks sandbox.ErrNotFound (ELOOP).
func (t *tree) lookup(p string, followLast bool) (*node, string, error) {
	r, err := rel(p)
	if err != nil {
		return nil, "", err
	}
	var done []string
	todo := split(r)
	hops := 0
	for len(todo) > 0 {
		c := todo[0]
		todo = todo[1:]
		switch c {
		case "", ".":
			continue
		case "..":
			if len(done) == 0 {
				return nil, "", &outsideError{real: path.Join(path.Dir(sandbox.Workdir), path.Join(todo...))}
			}
			done = done[:len(done)-1]
			continue
		}
		cur := path.Join(append(done, c)...)
		n := t.nodes[cur]
		switch {
		case n == nil && len(todo) > 0:
			return nil, "", sandbox.ErrNotFound
		case n == nil:
			return nil, cur, nil
		case n.kind == kindFile && len(todo) > 0:
			return nil, "", sandbox.ErrNotDir
		case n.kind != kindSymlink || len(todo) == 0 && !followLast:
			done = append(done, c)
			continue
		}
		if hops++; hops > maxHops {
			return nil, "", sandbox.ErrNotFound
		}
		target := n.target
		if path.IsAbs(target) {
			clean := path.Clean(target)
			if clean != sandbox.Workdir && !strings.HasPrefix(clean, sandbox.Workdir+"/") {
				return nil, "", &outsideError{real: path.Join(append([]string{clean}, todo...)...)}
			}
			done, target = nil, strings.TrimPrefix(strings.TrimPrefix(clean, sandbox.Workdir), "/")
		}
		todo = append(split(target), todo...)
	}
	real := path.Join(done...)
	return t.nodes[real], real, nil
}

func split(p string) []string {
	if p == "" {
		return nil
	}
	return strings.Split(p, "/")
}

// parent is the path of p's directory, "" for the workspace.
func parent(p string) string {
	if d := path.Dir(p); d != "." {
		return d
	}
	return ""
}

// mkdirAll makes the directory p (a real path) and its missing parents,
// following symlinks on the way as mkdir -p does.
func (t *tree) mkdirAll(p string, perm fs.FileMode) (string, error) {
	done := ""
	for _, c := range split(p) {
		next := path.Join(done, c)
		n, real, err := t.lookup(next, true)
		if err != nil {
			return "", err
		}
		if n == nil && real != next {
			return "", sandbox.ErrNotFound // a dangling symlink on the way
		}
		switch {
		case n == nil:
			if t.nodes[parent(real)].perm&ownerWrite == 0 {
				return "", fs.ErrPermission
			}
			t.nodes[real] = &node{kind: kindDir, perm: perm}
		case n.kind != kindDir:
			return "", sandbox.ErrNotDir
		}
		done = real
	}
	return done, nil
}

// removeAll removes p (a real path) and everything under it.
func (t *tree) removeAll(p string) {
	for k := range t.nodes {
		if k == p || strings.HasPrefix(k, p+"/") {
			delete(t.nodes, k)
		}
	}
	if p == "" {
		t.nodes[""] = &node{kind: kindDir, perm: 0o755}
	}
}
