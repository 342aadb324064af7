package gitops

import (
	"errors"
	"fmt"
	"io"
	"strings"

	"github.com/go-git/go-git/v5/plumbing"
	"github.com/go-git/go-git/v5/plumbing/filemode"
	"github.com/go-git/go-git/v5/plumbing/object"
)

// ReadFile returns the file name (a slash-separated path) of the commit
// that ref names, resolved as Ref resolves it, without a clone: what a
// task starting from ref will find there. found is false when the commit
// has no regular file at name (a symlink is not followed). A file over
// max bytes is an error.
func (in *Inspection) ReadFile(ref, name string, max int64) (data []byte, found bool, err error) {
	commit, err := in.commitOf(ref)
	if err != nil {
		return nil, false, err
	}
	c, err := in.repo.CommitObject(commit)
	if err != nil {
		return nil, false, fmt.Errorf("read %s at %s: %w", name, ref, err)
	}
	tree, err := c.Tree()
	if err != nil {
		return nil, false, fmt.Errorf("read %s at %s: %w", name, ref, err)
	}
	entry, err := tree.FindEntry(name)
	if errors.Is(err, object.ErrEntryNotFound) || errors.Is(err, object.ErrDirectoryNotFound) {
		return nil, false, nil
	}
	if err != nil {
		return nil, false, fmt.Errorf("read %s at %s: %w", name, ref, err)
	}
	if entry.Mode != filemode.Regular && entry.Mode != filemode.Executable {
		return nil, false, nil
	}
	blob, err := in.repo.BlobObject(entry.Hash)
	if err != nil {
		return nil, false, fmt.Errorf("read %s at %s: %w", name, ref, err)
	}
	if blob.Size > max {
		return nil, true, fmt.Errorf("%s is over %d KiB", name, max>>10)
	}
	r, err := blob.Reader()
	if err != nil {
		return nil, false, fmt.Errorf("read %s at %s: %w", name, ref, err)
	}
	defer r.Close()
	data, err = io.ReadAll(io.LimitReader(r, max))
	if err != nil {
		return nil, false, fmt.Errorf("read %s at %s: %w", name, ref, err)
	}
	return data, true, nil
}

// commitOf is the commit ref names, as Ref resolves it.
func (in *Inspection) commitOf(ref string) (plumbing.Hash, error) {
	target, isCommit, err := resolveCloneRef(ref, in.refs)
	if err != nil {
		return plumbing.ZeroHash, err
	}
	if isCommit {
		h, err := in.repo.ResolveRevision(plumbing.Revision(strings.ToLower(ref)))
		if err != nil {
			return plumbing.ZeroHash, fmt.Errorf("%w: %q is not a branch, tag or commit of the repository", ErrRefNotFound, ref)
		}
		return *h, nil
	}
	tip, err := in.repo.Storer.Reference(target)
	if err != nil {
		return plumbing.ZeroHash, fmt.Errorf("%w: %s has no commits", ErrRefNotFound, target.Short())
	}
	h, _, err := peelToCommit(in.repo, tip.Hash())
	return h, err
}
