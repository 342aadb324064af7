package gitops

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strings"

	"github.com/go-git/go-git/v5"
	"github.com/go-git/go-git/v5/plumbing"
	"github.com/go-git/go-git/v5/plumbing/filemode"
	"github.com/go-git/go-git/v5/plumbing/format/idxfile"
	"github.com/go-git/go-git/v5/plumbing/format/index"
	"github.com/go-git/go-git/v5/plumbing/object"
)

// ErrNotReclaimed matches the error Rollback returns when it deleted the
// branch but could not tell whether the objects only that branch used are
// unreachable: they are then kept.
var ErrNotReclaimed = errors.New("space not reclaimed")

// prunePacks removes the packs CommitTree wrote for tip, the commit of a
// branch just deleted, or for an earlier commit whose objects tip's tree
// reuses, when no object they hold is reachable any more: this gives back
// what those commits added once nothing uses them. Such a pack is one
// holding tip or an object of its tree, with exactly one commit and no
// delta, as newObjects writes them (a pack git makes by gc, repack or
// fetch of more than one commit is never touched). Reachable means, as for `git
// prune`, from any ref, the HEAD of any worktree, any reflog entry, any
// index (entries, cached trees, resolve-undo), and the state files of an
// operation under way (ORIG_HEAD, MERGE_HEAD, CHERRY_PICK_HEAD, a rebase,
// ...). A pack with a .keep file is kept. Anything it cannot read makes it
// keep every pack and return the error. It returns the bytes freed.
func prunePacks(ctx context.Context, repo *git.Repository, tip plumbing.Hash) (int64, error) {
	common, err := commonGitDir(repo)
	if err != nil {
		return 0, err
	}
	objs, err := commitObjects(ctx, repo, tip)
	if err != nil {
		return 0, err
	}
	cands, err := commitPacks(filepath.Join(common, "objects", "pack"), objs)
	if err != nil || len(cands) == 0 {
		return 0, err
	}
	roots, err := reachabilityRoots(repo, common)
	if err != nil {
		return 0, err
	}
	used, err := packsReached(ctx, repo, roots, cands)
	if err != nil {
		return 0, err
	}
	var freed int64
	for i, c := range cands {
		if used[i] {
			continue
		}
		n, err := removePack(c.base)
		freed += n
		if err != nil {
			return freed, err
		}
	}
	return freed, nil
}

// commitObjects lists the commit h and the trees and blobs of its tree.
func commitObjects(ctx context.Context, repo *git.Repository, h plumbing.Hash) ([]plumbing.Hash, error) {
	c, err := object.GetCommit(repo.Storer, h)
	if err != nil {
		return nil, fmt.Errorf("read commit %s: %w", h, err)
	}
	out := []plumbing.Hash{h}
	seen := make(map[plumbing.Hash]bool)
	stack := []plumbing.Hash{c.TreeHash}
	for len(stack) > 0 {
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		t := stack[len(stack)-1]
		stack = stack[:len(stack)-1]
		if seen[t] {
			continue
		}
		seen[t] = true
		out = append(out, t)
		tree, err := object.GetTree(repo.Storer, t)
		if err != nil {
			return nil, fmt.Errorf("read tree %s: %w", t, err)
		}
		for _, e := range tree.Entries {
			switch e.Mode {
			case filemode.Submodule:
			case filemode.Dir:
				stack = append(stack, e.Hash)
			default:
				out = append(out, e.Hash)
			}
		}
	}
	return out, nil
}

// candidatePack is a pack CommitTree may have written.
type candidatePack struct {
	base string // path without .pack / .idx
	idx  *idxfile.MemoryIndex
}

// commitPacks returns the packs of dir, without a .keep, that hold one of
// objs and have the shape of a commit's pack: one commit, no delta.
func commitPacks(dir string, objs []plumbing.Hash) ([]candidatePack, error) {
	idxs, err := filepath.Glob(filepath.Join(dir, "pack-*.idx"))
	if err != nil {
		return nil, err
	}
	var out []candidatePack
	for _, name := range idxs {
		base := strings.TrimSuffix(name, ".idx")
		if _, err := os.Stat(base + ".keep"); err == nil {
			continue
		}
		idx, err := readPackIndex(name)
		if err != nil {
			return nil, fmt.Errorf("read %s: %w", name, err)
		}
		holds := false
		for _, h := range objs {
			if ok, _ := idx.Contains(h); ok {
				holds = true
				break
			}
		}
		if !holds {
			continue
		}
		one, err := oneCommitNoDelta(base+".pack", idx)
		if err != nil {
			return nil, err
		}
		if one {
			out = append(out, candidatePack{base: base, idx: idx})
		}
	}
	return out, nil
}

// oneCommitNoDelta reports whether the pack holds exactly one commit and
// stores every object whole. It stops at the first entry that says no.
func oneCommitNoDelta(pack string, idx *idxfile.MemoryIndex) (bool, error) {
	f, err := os.Open(pack)
	if err != nil {
		return false, err
	}
	defer f.Close()
	entries, err := idx.Entries()
	if err != nil {
		return false, err
	}
	defer entries.Close()
	commits := 0
	var b [1]byte
	for {
		e, err := entries.Next()
		if errors.Is(err, io.EOF) {
			return commits == 1, nil
		}
		if err != nil {
			return false, err
		}
		if _, err := f.ReadAt(b[:], int64(e.Offset)); err != nil {
			return false, fmt.Errorf("read %s: %w", filepath.Base(pack), err)
		}
		switch plumbing.ObjectType(b[0] >> 4 & 7) {
		case plumbing.OFSDeltaObject, plumbing.REFDeltaObject:
			return false, nil
		case plumbing.CommitObject:
			if commits++; commits > 1 {
				return false, nil
			}
		}
	}
}

func readPackIndex(name string) (*idxfile.MemoryIndex, error) {
	f, err := os.Open(name)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	idx := idxfile.NewMemoryIndex()
	if err := idxfile.NewDecoder(bufio.NewReader(f)).Decode(idx); err != nil {
		return nil, err
	}
	return idx, nil
}

// reachabilityRoots lists the objects git counts as in use.
func reachabilityRoots(repo *git.Repository, common string) ([]plumbing.Hash, error) {
	var roots []plumbing.Hash
	refs, err := repo.Storer.IterReferences()
	if err != nil {
		return nil, fmt.Errorf("list refs: %w", err)
	}
	err = refs.ForEach(func(r *plumbing.Reference) error {
		if r.Type() == plumbing.HashReference {
			roots = append(roots, r.Hash())
		}
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("list refs: %w", err)
	}
	wts, err := worktrees(repo)
	if err != nil {
		return nil, err
	}
	for _, wt := range wts {
		dirs := []string{wt.gitDir}
		if wt.gitDir != common {
			// A linked worktree's own refs (refs/bisect, refs/worktree).
			dirs = append(dirs, filepath.Join(wt.gitDir, "refs"))
		}
		for _, name := range []string{"HEAD", "ORIG_HEAD", "FETCH_HEAD", "MERGE_HEAD", "CHERRY_PICK_HEAD", "REVERT_HEAD", "REBASE_HEAD", "BISECT_HEAD", "AUTO_MERGE", "rebase-merge", "rebase-apply", "sequencer", "refs", "logs"} {
			if name == "refs" && wt.gitDir == common {
				continue // read through the storer
			}
			hs, err := hashesUnder(filepath.Join(wt.gitDir, name))
			if err != nil {
				return nil, err
			}
			roots = append(roots, hs...)
		}
		hs, err := indexObjects(filepath.Join(wt.gitDir, "index"))
		if err != nil {
			return nil, err
		}
		roots = append(roots, hs...)
		// HEAD naming a branch: resolved through the refs above.
	}
	return roots, nil
}

// hashesUnder returns every 40-hex token of the file p, or of the files
// below the directory p: refs, reflogs and the state files of git
// operations all name objects that way. A missing p holds none.
func hashesUnder(p string) ([]plumbing.Hash, error) {
	var out []plumbing.Hash
	err := filepath.WalkDir(p, func(name string, d fs.DirEntry, err error) error {
		if errors.Is(err, fs.ErrNotExist) {
			return nil
		}
		if err != nil || d.IsDir() || !d.Type().IsRegular() {
			return err
		}
		b, err := os.ReadFile(name)
		if err != nil {
			return err
		}
		for _, tok := range strings.FieldsFunc(string(b), func(r rune) bool {
			return !('0' <= r && r <= '9' || 'a' <= r && r <= 'f')
		}) {
			if len(tok) == 40 {
				if h := plumbing.NewHash(tok); !h.IsZero() {
					out = append(out, h)
				}
			}
		}
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("read %s: %w", p, err)
	}
	return out, nil
}

// indexObjects lists the objects an index names: its entries (every
// stage), its cached trees and its resolve-undo records.
func indexObjects(p string) ([]plumbing.Hash, error) {
	f, err := os.Open(p)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	defer f.Close()
	var idx index.Index
	if err := index.NewDecoder(bufio.NewReader(f)).Decode(&idx); err != nil {
		return nil, fmt.Errorf("read index %s: %w", p, err)
	}
	var out []plumbing.Hash
	for _, e := range idx.Entries {
		if e.Mode != filemode.Submodule {
			out = append(out, e.Hash)
		}
	}
	if idx.Cache != nil {
		for _, e := range idx.Cache.Entries {
			out = append(out, e.Hash)
		}
	}
	if idx.ResolveUndo != nil {
		for _, e := range idx.ResolveUndo.Entries {
			for _, h := range e.Stages {
				out = append(out, h)
			}
		}
	}
	return out, nil
}

// packsReached walks the objects reachable from roots and reports which
// of cands hold one of them. It stops as soon as every candidate is
// known to be used. An object the repository lacks (beyond a shallow
// boundary, say) ends its path.
func packsReached(ctx context.Context, repo *git.Repository, roots []plumbing.Hash, cands []candidatePack) ([]bool, error) {
	used := make([]bool, len(cands))
	left := len(cands)
	mark := func(h plumbing.Hash) {
		for i, c := range cands {
			if !used[i] {
				if ok, _ := c.idx.Contains(h); ok {
					used[i] = true
					left--
				}
			}
		}
	}
	seen := make(map[plumbing.Hash]bool)
	stack := append([]plumbing.Hash(nil), roots...)
	for len(stack) > 0 && left > 0 {
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		h := stack[len(stack)-1]
		stack = stack[:len(stack)-1]
		if seen[h] {
			continue
		}
		seen[h] = true
		mark(h)
		obj, err := repo.Storer.EncodedObject(plumbing.AnyObject, h)
		if errors.Is(err, plumbing.ErrObjectNotFound) {
			continue
		}
		if err != nil {
			return nil, fmt.Errorf("read object %s: %w", h, err)
		}
		switch obj.Type() {
		case plumbing.CommitObject:
			c, err := object.DecodeCommit(repo.Storer, obj)
			if err != nil {
				return nil, err
			}
			stack = append(stack, c.TreeHash)
			stack = append(stack, c.ParentHashes...)
		case plumbing.TreeObject:
			t, err := object.DecodeTree(repo.Storer, obj)
			if err != nil {
				return nil, err
			}
			for _, e := range t.Entries {
				switch e.Mode {
				case filemode.Submodule:
				case filemode.Dir:
					stack = append(stack, e.Hash)
				default:
					if !seen[e.Hash] {
						seen[e.Hash] = true
						mark(e.Hash) // a blob: nothing below it
					}
				}
			}
		case plumbing.TagObject:
			tag, err := object.DecodeTag(repo.Storer, obj)
			if err != nil {
				return nil, err
			}
			stack = append(stack, tag.Target)
		}
	}
	return used, nil
}

// removePack deletes a pack and the files git keeps beside it, the pack
// first as git does, and returns the bytes freed.
func removePack(base string) (int64, error) {
	var freed int64
	for _, ext := range []string{".pack", ".idx", ".rev", ".bitmap", ".mtimes", ".promisor"} {
		fi, err := os.Stat(base + ext)
		if errors.Is(err, fs.ErrNotExist) {
			continue
		}
		if err == nil {
			err = os.Remove(base + ext)
		}
		if err != nil {
			return freed, fmt.Errorf("remove %s: %w", filepath.Base(base+ext), err)
		}
		freed += fi.Size()
	}
	return freed, nil
}
