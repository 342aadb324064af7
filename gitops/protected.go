package gitops

import (
	"context"
	"errors"
	"fmt"
	"io"
	"strings"

	"github.com/go-git/go-git/v5/plumbing"
	"github.com/go-git/go-git/v5/plumbing/filemode"
	"github.com/go-git/go-git/v5/plumbing/storer"

	"github.com/runner-dev/runner/internal/policy"
	"github.com/runner-dev/runner/internal/wildmatch"
)

// ProtectedPathError reports a snapshot refused by CommitTree because it
// changes protected paths: nothing was written to the repository.
type ProtectedPathError struct {
	// Changes lists every offending change, in path order.
	Changes []FileChange
	// Notes says, in the order of Changes, how a change that is not to a
	// protected path as such changes one ("" for one that is).
	Notes []string
	// Err, when set, is why the changes could not be checked at all.
	Err error
}

func (e *ProtectedPathError) Error() string {
	var b strings.Builder
	fmt.Fprintf(&b, "%s: ", ErrProtectedPath)
	if e.Err != nil {
		b.WriteString(e.Err.Error())
		if len(e.Changes) > 0 {
			b.WriteString("; changes: ")
		}
	}
	for i, c := range e.Changes {
		if i > 0 {
			b.WriteString(", ")
		}
		fmt.Fprintf(&b, "%s (%s", c.Path, c.Kind.verb())
		if i < len(e.Notes) && e.Notes[i] != "" {
			b.WriteString(", " + e.Notes[i])
		}
		b.WriteString(")")
	}
	return b.String()
}

// Paths returns the offending paths.
func (e *ProtectedPathError) Paths() []string {
	paths := make([]string, len(e.Changes))
	for i, c := range e.Changes {
		paths[i] = c.Path
	}
	return paths
}

// Is makes errors.Is(err, ErrProtectedPath) true.
func (e *ProtectedPathError) Is(target error) bool { return target == ErrProtectedPath }

// Unwrap returns why the changes could not be checked, if that is the
// problem.
func (e *ProtectedPathError) Unwrap() error { return e.Err }

// maxSymlinkTarget bounds the symlink targets read from the repository; a
// longer one is no path any system resolves.
const maxSymlinkTarget = 64 << 10

// checkProtected refuses the changes from base to next that change what a
// checkout shows at a protected path (see policy.Protection.Exposed): a
// change to a protected path under any spelling a file system takes for it,
// to an entry a symlink shows at one, to a symlink through which one is
// shown, or of a symlink or submodule placed at or above paths a glob
// could match. Symlinks are resolved in the tree they belong to, base or
// next; a change exposed in either is refused. Symlink targets come from
// the snapshot, or from the repository for the base's.
func checkProtected(ctx context.Context, st storer.EncodedObjectStorer, base, next map[string]treeEntry, snap *snapshot,
	changes []FileChange, globs []string) error {
	prot := policy.NewProtection(globs)
	if prot.Empty() || len(changes) == 0 {
		return nil
	}
	var bad ProtectedPathError
	if !hasLinks(base) && !hasLinks(next) {
		// Without symlinks or submodules a checkout shows each file at its
		// own path only: the changed paths are all there is to match.
		for _, c := range changes {
			if glob, ok := prot.Match(c.Path); ok {
				bad.Changes = append(bad.Changes, c)
				bad.Notes = append(bad.Notes, exposureNote(c.Path, policy.File, policy.Exposure{Glob: glob}))
			}
		}
		return bad.orNil()
	}
	baseTree, err := protectionTree(st, base, snap)
	if err != nil {
		return err
	}
	nextTree, err := protectionTree(st, next, snap)
	if err != nil {
		return err
	}
	exposedBase, err := exposed(ctx, prot, baseTree)
	if err != nil {
		return err
	}
	exposedNext, err := exposed(ctx, prot, nextTree)
	if err != nil {
		return err
	}
	for _, c := range changes {
		e, ok := exposedNext[c.Path]
		kind := nextTree[c.Path].Kind
		if !ok {
			e, ok = exposedBase[c.Path]
			kind = baseTree[c.Path].Kind
		}
		if ok {
			bad.Changes = append(bad.Changes, c)
			bad.Notes = append(bad.Notes, exposureNote(c.Path, kind, e))
		}
	}
	return bad.orNil()
}

func (e *ProtectedPathError) orNil() error {
	if len(e.Changes) == 0 && e.Err == nil {
		return nil
	}
	return e
}

// hasLinks reports whether files hold a symlink or a submodule.
func hasLinks(files map[string]treeEntry) bool {
	for _, e := range files {
		if e.mode == filemode.Symlink || e.mode == filemode.Submodule {
			return true
		}
	}
	return false
}

// exposed is Exposed, its refusal of a tree it cannot check made a
// *ProtectedPathError.
func exposed(ctx context.Context, prot *policy.Protection, tree map[string]policy.Entry) (map[string]policy.Exposure, error) {
	m, err := prot.Exposed(ctx, tree)
	if errors.Is(err, policy.ErrTooManyPaths) {
		return nil, &ProtectedPathError{Err: err}
	}
	return m, err
}

// exposureNote says how a change to p changes a protected path, or "" when
// p is one as written.
func exposureNote(p string, kind policy.EntryKind, e policy.Exposure) string {
	what := "a symlink"
	if kind == policy.Gitlink {
		what = "a submodule"
	}
	switch {
	case e.Placed:
		return fmt.Sprintf("%s where %s could match below", what, e.Glob)
	case e.Shown != "" && kind == policy.Symlink:
		return fmt.Sprintf("%s through which a checkout shows %s", what, e.Shown)
	case e.Shown != "":
		return fmt.Sprintf("a checkout also shows it at %s, through a symlink", e.Shown)
	case !wildmatch.MatchPath(e.Glob, p):
		return fmt.Sprintf("taken for %s by case-insensitive or Windows file systems", e.Glob)
	}
	return ""
}

// protectionTree describes files for the policy, with symlink targets.
func protectionTree(st storer.EncodedObjectStorer, files map[string]treeEntry, snap *snapshot) (map[string]policy.Entry, error) {
	out := make(map[string]policy.Entry, len(files))
	for p, te := range files {
		switch te.mode {
		case filemode.Symlink:
			target, err := symlinkTarget(st, p, te, snap)
			if err != nil {
				return nil, err
			}
			out[p] = policy.Entry{Kind: policy.Symlink, Target: target}
		case filemode.Submodule:
			out[p] = policy.Entry{Kind: policy.Gitlink}
		default:
			out[p] = policy.Entry{Kind: policy.File}
		}
	}
	return out, nil
}

// symlinkTarget returns the target of the symlink p: from the snapshot
// when it holds this very link, else read from the repository. An
// oversized target is returned empty (it resolves to nothing).
func symlinkTarget(st storer.EncodedObjectStorer, p string, te treeEntry, snap *snapshot) (string, error) {
	if e, ok := snap.entries[p]; ok && e.kind == kindSymlink && e.hash == te.hash {
		return e.target, nil
	}
	obj, err := st.EncodedObject(plumbing.BlobObject, te.hash)
	if err != nil {
		return "", fmt.Errorf("read symlink %s: %w", p, err)
	}
	if obj.Size() > maxSymlinkTarget {
		return "", nil
	}
	r, err := obj.Reader()
	if err != nil {
		return "", fmt.Errorf("read symlink %s: %w", p, err)
	}
	defer r.Close()
	b, err := io.ReadAll(io.LimitReader(r, maxSymlinkTarget))
	if err != nil {
		return "", fmt.Errorf("read symlink %s: %w", p, err)
	}
	return string(b), nil
}

// verb names a change in words, for messages.
func (k ChangeKind) verb() string {
	switch k {
	case Added:
		return "added"
	case Modified:
		return "modified"
	case Deleted:
		return "deleted"
	case TypeChanged:
		return "type changed"
	}
	return "changed"
}
