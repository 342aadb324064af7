package gitops

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/go-git/go-git/v5"
	"github.com/go-git/go-git/v5/config"
	"github.com/go-git/go-git/v5/plumbing"
)

// pushRemoteName names the in-memory remote used for pushes; it is never
// saved to the repository's config.
const pushRemoteName = "runner"

// Push sends refs/heads/<branch> of the repository at repoPath to the same
// name on remote. Without force only a fast-forward is accepted
// (ErrPushRejected otherwise). The remote is not added to the repository's
// config and the credentials are neither stored nor shown in errors. A
// remote already up to date is success.
func Push(ctx context.Context, repoPath string, remote RemoteSpec, branch string, force bool) error {
	ref, err := branchRef(branch)
	if err != nil {
		return err
	}
	repo, err := openRepo(repoPath)
	if err != nil {
		return err
	}
	if _, err := repo.Storer.Reference(ref); errors.Is(err, plumbing.ErrReferenceNotFound) {
		return fmt.Errorf("push %s: %w", branch, ErrBranchNotFound)
	} else if err != nil {
		return fmt.Errorf("push %s: read branch: %w", branch, err)
	}
	spec := config.RefSpec(ref.String() + ":" + ref.String())
	if force {
		spec = "+" + spec
	}
	return pushRefSpec(ctx, repo, remote, spec)
}

// Rollback deletes branch from the repository at repoPath and, when remote
// is not nil, from the remote first, so that a failed remote deletion can
// be retried. It refuses the branch the repository's HEAD points to
// (ErrBranchCheckedOut). A branch already absent, locally or remotely,
// counts as deleted, so Rollback can be repeated.
//
// As `git branch -D` does, the branch's reflog goes with it. Then the
// pack CommitTree wrote for the branch's commit is removed if nothing
// reaches any of its objects any more (see prunePacks); a commit the user
// merged or cherry-picked, or still checked out somewhere, keeps it. When
// that cannot be decided, the branch is deleted all the same and the
// error matches ErrNotReclaimed.
func Rollback(ctx context.Context, repoPath, branch string, remote *RemoteSpec) error {
	ref, err := branchRef(branch)
	if err != nil {
		return err
	}
	repo, err := openRepo(repoPath)
	if err != nil {
		return err
	}
	if err := refuseCheckedOut(repo, ref); err != nil {
		return fmt.Errorf("rollback %s: %w", branch, err)
	}
	if remote != nil {
		if err := pushRefSpec(ctx, repo, *remote, config.RefSpec(":"+ref.String())); err != nil {
			return fmt.Errorf("rollback %s: %w", branch, err)
		}
	}
	tip := plumbing.ZeroHash
	if r, err := repo.Storer.Reference(ref); err == nil && r.Type() == plumbing.HashReference {
		tip = r.Hash()
	}
	if err := deleteBranch(repo, ref); err != nil {
		return fmt.Errorf("rollback %s: %w", branch, err)
	}
	if tip.IsZero() {
		return nil
	}
	if _, err := prunePacks(ctx, repo, tip); err != nil {
		return fmt.Errorf("rollback %s: branch deleted, its objects kept: %w: %w", branch, ErrNotReclaimed, err)
	}
	return nil
}

func pushRefSpec(ctx context.Context, repo *git.Repository, remote RemoteSpec, spec config.RefSpec) error {
	acc, err := remote.access()
	if err != nil {
		return fmt.Errorf("push: %w", err)
	}
	rem := git.NewRemote(repo.Storer, &config.RemoteConfig{Name: pushRemoteName, URLs: []string{acc.url}})
	err = rem.PushContext(ctx, &git.PushOptions{
		RemoteName: pushRemoteName,
		RefSpecs:   []config.RefSpec{spec},
		Auth:       acc.auth,
	})
	switch {
	case err == nil, errors.Is(err, git.NoErrAlreadyUpToDate):
		return nil
	case errors.Is(err, git.ErrForceNeeded), strings.Contains(err.Error(), "non-fast-forward"):
		err = fmt.Errorf("%w: %s to %s: %w", ErrPushRejected, spec, acc.url, err)
	default:
		err = fmt.Errorf("push %s to %s: %w", spec, acc.url, err)
	}
	return acc.secret.Error(err)
}

// DeleteRemoteBranch deletes branch from a remote only, for a result branch
// that was made in a temporary clone long gone: an empty scratch repository
// stands in for it, since deleting a remote branch sends no objects.
func DeleteRemoteBranch(ctx context.Context, remote RemoteSpec, branch string) error {
	dir, err := os.MkdirTemp("", "runner-rollback-")
	if err != nil {
		return fmt.Errorf("rollback %s: %w", branch, err)
	}
	defer os.RemoveAll(dir)
	// HEAD names a branch as unique as the directory, so that it is never
	// the branch to delete, which Rollback would refuse as checked out.
	head := plumbing.NewBranchReferenceName(filepath.Base(dir))
	_, err = git.PlainInitWithOptions(dir, &git.PlainInitOptions{
		Bare: true, InitOptions: git.InitOptions{DefaultBranch: head},
	})
	if err != nil {
		return fmt.Errorf("rollback %s: scratch repository: %w", branch, err)
	}
	return Rollback(ctx, dir, branch, &remote)
}
