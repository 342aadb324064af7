package gitops

import (
	"fmt"

	"github.com/go-git/go-git/v5/plumbing"
)

// PointBranch points branch of the local repository at repoPath at commit,
// a commit the repository already holds (one a task committed on another
// branch). It creates the branch; an existing one is moved only with
// force, by compare-and-swap (ErrBranchChanged if it moved meanwhile).
// Like CommitTree, it never writes a branch checked out in a worktree nor
// one git could not hold beside the existing refs.
func PointBranch(repoPath, branch string, commit plumbing.Hash, force bool) error {
	ref, err := branchRef(branch)
	if err != nil {
		return err
	}
	repo, err := openRepo(repoPath)
	if err != nil {
		return err
	}
	if _, err := repo.CommitObject(commit); err != nil {
		return fmt.Errorf("point %s at %s: %w", branch, commit, err)
	}
	if err := setBranch(repo, ref, commit, force, plumbing.ZeroHash); err != nil {
		return fmt.Errorf("point %s at %s: %w", branch, commit, err)
	}
	return nil
}
