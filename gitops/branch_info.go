package gitops

import (
	"errors"
	"fmt"

	"github.com/go-git/go-git/v5/plumbing"
)

// BranchHead returns the commit a branch points to and its message; found
// is false when the branch does not exist. The runner reads it on resume,
// to recognise a branch left by an earlier attempt of the same task.
func BranchHead(repoPath, branch string) (hash plumbing.Hash, message string, found bool, err error) {
	ref, err := branchRef(branch)
	if err != nil {
		return hash, "", false, err
	}
	repo, err := openRepo(repoPath)
	if err != nil {
		return hash, "", false, err
	}
	r, err := repo.Reference(ref, true)
	if errors.Is(err, plumbing.ErrReferenceNotFound) {
		return hash, "", false, nil
	}
	if err != nil {
		return hash, "", false, fmt.Errorf("read branch %s: %w", branch, err)
	}
	c, err := repo.CommitObject(r.Hash())
	if err != nil {
		return hash, "", false, fmt.Errorf("read branch %s: %w", branch, err)
	}
	return r.Hash(), c.Message, true, nil
}
