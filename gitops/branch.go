package gitops

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"

	"github.com/go-git/go-billy/v5"
	"github.com/go-git/go-git/v5"
	"github.com/go-git/go-git/v5/plumbing"
	"github.com/go-git/go-git/v5/storage"
	"github.com/go-git/go-git/v5/storage/filesystem"
)

// openRepo opens the repository at path (a worktree, its .git, a bare
// repository or a linked worktree) without writing anything, with steady
// listings (see steadyFS), since other tasks and git may write to it
// meanwhile.
func openRepo(path string) (*git.Repository, error) {
	repo, err := git.PlainOpenWithOptions(path, &git.PlainOpenOptions{EnableDotGitCommonDir: true})
	if err == nil {
		repo, err = steadyRepo(repo)
	}
	if err != nil {
		return nil, fmt.Errorf("open repository %s: %w", path, err)
	}
	return repo, nil
}

// gitDir returns the file system of the repository's git directory.
func gitDir(repo *git.Repository) (billy.Filesystem, error) {
	fs, ok := repo.Storer.(*filesystem.Storage)
	if !ok {
		return nil, fmt.Errorf("repository is not stored on disk (%T)", repo.Storer)
	}
	return fs.Filesystem(), nil
}

// lockRef takes git's lock for ref, the file <ref>.lock created
// exclusively, so that updates of the same branch by concurrent tasks, or
// by git itself, are serialised rather than interleaved.
func lockRef(repo *git.Repository, ref plumbing.ReferenceName) (unlock func(), err error) {
	fs, err := gitDir(repo)
	if err != nil {
		return nil, err
	}
	name := ref.String() + ".lock"
	f, err := fs.OpenFile(name, os.O_CREATE|os.O_EXCL|os.O_WRONLY, 0o666)
	if errors.Is(err, os.ErrExist) {
		return nil, fmt.Errorf("%w: %s exists (remove it if no git process is running)", ErrBranchLocked, name)
	}
	if err != nil {
		return nil, fmt.Errorf("lock %s: %w", ref, err)
	}
	if err := f.Close(); err != nil {
		_ = fs.Remove(name)
		return nil, fmt.Errorf("lock %s: %w", ref, err)
	}
	return func() { _ = fs.Remove(name) }, nil
}

// setBranch points ref at h, under the ref's lock. With expect set, the
// branch must be at expect and is moved from it by compare-and-swap.
// Otherwise a new branch is created only if absent; with force an existing
// one is moved by compare-and-swap
// (go-git's CheckAndSetReference) against the value just read, so a
// concurrent move is reported as ErrBranchChanged instead of being lost.
// A branch checked out in any worktree is never written (a
// *CheckedOutError), nor one that git could not hold beside the existing
// refs (a *RefConflictError); both are checked under the lock, since the
// user may check a branch out or create one while a task runs.
func setBranch(repo *git.Repository, ref plumbing.ReferenceName, h plumbing.Hash, force bool, expect plumbing.Hash) error {
	// A conflict would make the lock itself fail, with a less clear error.
	if err := refuseConflict(repo, ref); err != nil {
		return err
	}
	unlock, err := lockRef(repo, ref)
	if err != nil {
		return err
	}
	defer unlock()
	if err := refuseCheckedOut(repo, ref); err != nil {
		return err
	}
	if err := refuseConflict(repo, ref); err != nil {
		return err
	}
	cur, err := repo.Storer.Reference(ref)
	var old *plumbing.Reference
	switch {
	case !expect.IsZero():
		if err := expectAt(ref, cur, err, expect); err != nil {
			return err
		}
		old = cur
	case errors.Is(err, plumbing.ErrReferenceNotFound):
	case err != nil:
		return fmt.Errorf("read %s: %w", ref, err)
	case !force:
		return fmt.Errorf("%w: %s", ErrBranchExists, ref.Short())
	default:
		old = cur
	}
	err = repo.Storer.CheckAndSetReference(plumbing.NewHashReference(ref, h), old)
	if errors.Is(err, storage.ErrReferenceHasChanged) {
		return fmt.Errorf("%w: %s", ErrBranchChanged, ref.Short())
	}
	if err != nil {
		return fmt.Errorf("update %s: %w", ref, err)
	}
	return nil
}

// expectAt checks that ref, read as cur with readErr, points at expect.
func expectAt(ref plumbing.ReferenceName, cur *plumbing.Reference, readErr error, expect plumbing.Hash) error {
	switch {
	case errors.Is(readErr, plumbing.ErrReferenceNotFound):
		return fmt.Errorf("%w: %s no longer exists (it was at %s)", ErrBranchChanged, ref.Short(), expect)
	case readErr != nil:
		return fmt.Errorf("read %s: %w", ref, readErr)
	case cur.Type() != plumbing.HashReference || cur.Hash() != expect:
		return fmt.Errorf("%w: %s is at %s, not at %s", ErrBranchChanged, ref.Short(), cur.Hash(), expect)
	}
	return nil
}

// deleteBranch removes ref (loose and packed) under its lock; a missing
// branch is not an error. Callers check refuseCheckedOut first.
func deleteBranch(repo *git.Repository, ref plumbing.ReferenceName) error {
	unlock, err := lockRef(repo, ref)
	if err != nil {
		return err
	}
	defer unlock()
	if err := repo.Storer.RemoveReference(ref); err != nil {
		return fmt.Errorf("delete %s: %w", ref, err)
	}
	// Its reflog too, as git does (runner writes none; git may have).
	common, err := commonGitDir(repo)
	if err != nil {
		return err
	}
	if err := os.Remove(filepath.Join(common, "logs", filepath.FromSlash(ref.String()))); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return fmt.Errorf("delete the reflog of %s: %w", ref, err)
	}
	return nil
}
