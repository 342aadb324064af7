package gitops

import (
	"context"
	"fmt"
	"path"
	"sort"
	"strings"

	"github.com/go-git/go-git/v5/plumbing"
	"github.com/go-git/go-git/v5/plumbing/filemode"
	"github.com/go-git/go-git/v5/plumbing/object"
	"github.com/go-git/go-git/v5/plumbing/storer"
)

// treeEntry is a non-directory entry of a tree: blob, symlink or gitlink.
type treeEntry struct {
	mode filemode.FileMode
	hash plumbing.Hash
}

// flattenTree lists every non-directory entry below tree h by full path.
func flattenTree(s storer.EncodedObjectStorer, h plumbing.Hash) (map[string]treeEntry, error) {
	out := make(map[string]treeEntry)
	var walk func(prefix string, h plumbing.Hash) error
	walk = func(prefix string, h plumbing.Hash) error {
		t, err := object.GetTree(s, h)
		if err != nil {
			return fmt.Errorf("read tree %s: %w", h, err)
		}
		for _, e := range t.Entries {
			if e.Mode == filemode.Dir {
				if err := walk(prefix+e.Name+"/", e.Hash); err != nil {
					return err
				}
				continue
			}
			out[prefix+e.Name] = treeEntry{mode: e.Mode, hash: e.Hash}
		}
		return nil
	}
	return out, walk("", h)
}

// planTree computes the index `git add -A` would produce in a checkout of
// base holding exactly the snapshot's files:
//
//   - a tracked path present in the snapshot as a file or symlink takes its
//     content and mode, even when ignored; absent, it is deleted;
//   - an untracked file or symlink is added unless ignored;
//   - a gitlink (submodule) stays as it is while its directory exists,
//     empty (as the clone left it) or not, and the snapshot's content
//     below it is not imported; a gitlink whose directory is gone is
//     deleted, one replaced by a file or a symlink changes type;
//   - an untracked directory holding a .git of its own (nested) is left
//     out whole (see nestedRepos).
//
// It stops with ctx's error once ctx is done.
func planTree(ctx context.Context, base map[string]treeEntry, snap *snapshot, ig *ignoreRules, nested map[string]bool) (map[string]treeEntry, error) {
	out := make(map[string]treeEntry, len(base))
	gitlinks := keptGitlinks(base, snap)
	for p, be := range base {
		if gitlinks[p] {
			out[p] = be
			continue
		}
		if e, ok := snap.entries[p]; ok && e.kind != kindDir {
			out[p] = treeEntry{mode: e.mode, hash: e.hash}
		}
	}
	for p, e := range snap.entries {
		if e.kind == kindDir {
			continue
		}
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		if _, tracked := base[p]; tracked || underAny(gitlinks, p) || underAny(nested, p) || ig.ignored(p) {
			continue
		}
		out[p] = treeEntry{mode: e.mode, hash: e.hash}
	}
	return out, nil
}

// keptGitlinks are the gitlinks of base whose directory the snapshot
// still has: git keeps them, since it cannot tell an emptied or
// uninitialised submodule from an unchanged one.
func keptGitlinks(base map[string]treeEntry, snap *snapshot) map[string]bool {
	kept := make(map[string]bool)
	for p, be := range base {
		if e, ok := snap.entries[p]; ok && be.mode == filemode.Submodule && e.kind == kindDir {
			kept[p] = true
		}
	}
	return kept
}

// underAny reports whether a parent directory of p is in dirs.
func underAny(dirs map[string]bool, p string) bool {
	if len(dirs) == 0 {
		return false
	}
	for dir := path.Dir(p); dir != "."; dir = path.Dir(dir) {
		if dirs[dir] {
			return true
		}
	}
	return false
}

// writeTree stores the trees holding files and returns the root tree hash.
// Trees the repository already has are not written again.
func writeTree(ctx context.Context, s objectSink, files map[string]treeEntry) (plumbing.Hash, error) {
	root := &treeNode{}
	for p, e := range files {
		if err := ctx.Err(); err != nil {
			return plumbing.ZeroHash, err
		}
		n := root
		parts := strings.Split(p, "/")
		for _, d := range parts[:len(parts)-1] {
			n = n.child(d)
		}
		n.entries = append(n.entries, object.TreeEntry{Name: parts[len(parts)-1], Mode: e.mode, Hash: e.hash})
	}
	return root.write(ctx, s)
}

type treeNode struct {
	entries []object.TreeEntry
	dirs    map[string]*treeNode
}

func (n *treeNode) child(name string) *treeNode {
	if n.dirs == nil {
		n.dirs = make(map[string]*treeNode)
	}
	c, ok := n.dirs[name]
	if !ok {
		c = &treeNode{}
		n.dirs[name] = c
	}
	return c
}

func (n *treeNode) write(ctx context.Context, s objectSink) (plumbing.Hash, error) {
	if err := ctx.Err(); err != nil {
		return plumbing.ZeroHash, err
	}
	for name, c := range n.dirs {
		h, err := c.write(ctx, s)
		if err != nil {
			return plumbing.ZeroHash, err
		}
		n.entries = append(n.entries, object.TreeEntry{Name: name, Mode: filemode.Dir, Hash: h})
	}
	sort.Sort(object.TreeEntrySorter(n.entries))
	for i := 1; i < len(n.entries); i++ {
		if n.entries[i].Name == n.entries[i-1].Name {
			return plumbing.ZeroHash, fmt.Errorf("write tree: %q is both a file and a directory", n.entries[i].Name)
		}
	}
	obj := s.NewEncodedObject()
	if err := (&object.Tree{Entries: n.entries}).Encode(obj); err != nil {
		return plumbing.ZeroHash, fmt.Errorf("encode tree: %w", err)
	}
	return storeObject(s, obj)
}

// storeObject writes obj unless the repository already has it.
func storeObject(s objectSink, obj plumbing.EncodedObject) (plumbing.Hash, error) {
	h := obj.Hash()
	if s.HasEncodedObject(h) == nil {
		return h, nil
	}
	if _, err := s.SetEncodedObject(obj); err != nil {
		return plumbing.ZeroHash, fmt.Errorf("store %s %s: %w", obj.Type(), h, err)
	}
	return h, nil
}
