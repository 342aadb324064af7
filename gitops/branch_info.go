package gitops

import (
	"errors"
	"fmt"

	"github.com/go-git/go-git/v5/plumbing"
)

// BranchCommit is the commit a branch points to.
type BranchCommit struct {
	Hash    plumbing.Hash
	Message string
	Parents []plumbing.Hash
}

// ReadBranch returns the commit a branch points to; found is false when
// the branch does not exist. The runner reads it on resume, to recognise a
// branch left by an earlier attempt of the same task.
func ReadBranch(repoPath, branch string) (c BranchCommit, found bool, err error) {
	ref, err := branchRef(branch)
	if err != nil {
		return c, false, err
	}
	repo, err := openRepo(repoPath)
	if err != nil {
		return c, false, err
	}
	r, err := repo.Reference(ref, true)
	if errors.Is(err, plumbing.ErrReferenceNotFound) {
		return c, false, nil
	}
	if err != nil {
		return c, false, fmt.Errorf("read branch %s: %w", branch, err)
	}
	obj, err := repo.CommitObject(r.Hash())
	if err != nil {
		return c, false, fmt.Errorf("read branch %s: %w", branch, err)
	}
	return BranchCommit{Hash: r.Hash(), Message: obj.Message, Parents: obj.ParentHashes}, true, nil
}

// BranchHead returns the commit a branch points to and its message; found
// is false when the branch does not exist.
func BranchHead(repoPath, branch string) (hash plumbing.Hash, message string, found bool, err error) {
	c, found, err := ReadBranch(repoPath, branch)
	return c.Hash, c.Message, found, err
}
