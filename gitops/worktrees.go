package gitops

import (
	"bytes"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"

	"github.com/go-git/go-git/v5"
	"github.com/go-git/go-git/v5/plumbing"
)

// worktree is one working tree of a repository: the main one or a linked
// one (`git worktree add`), with its own HEAD.
type worktree struct {
	path   string // where its files are, for messages
	gitDir string // its HEAD, rebase and bisect state
	bare   bool   // the main "worktree" of a bare repository: HEAD only
}

// checkedOut maps each branch checked out in a worktree of repo to that
// worktree. As for git (find_shared_symref), a branch is checked out in a
// worktree whose HEAD points to it, or where a rebase or a bisect started
// from it is under way. Unlike git, the HEAD of a bare repository counts
// too: its branch is what every clone checks out. A linked worktree removed
// while it is read is skipped; any other read error is returned, so that
// the caller refuses rather than guesses.
func checkedOut(repo *git.Repository) (map[plumbing.ReferenceName]worktree, error) {
	wts, err := worktrees(repo)
	if err != nil {
		return nil, err
	}
	out := map[plumbing.ReferenceName]worktree{}
	for _, wt := range wts {
		refs, err := heldBy(wt.gitDir)
		if err != nil {
			return nil, fmt.Errorf("read worktree %s: %w", wt.path, err)
		}
		for _, ref := range refs {
			if _, ok := out[ref]; !ok {
				out[ref] = wt
			}
		}
	}
	return out, nil
}

// worktrees lists the worktrees of repo: the main one (bare or not) and
// the linked ones under <common dir>/worktrees.
func worktrees(repo *git.Repository) ([]worktree, error) {
	common, err := commonGitDir(repo)
	if err != nil {
		return nil, err
	}
	cfg, err := repo.Config()
	if err != nil {
		return nil, fmt.Errorf("read config: %w", err)
	}
	main := worktree{path: common, gitDir: common, bare: cfg.Core.IsBare}
	if !main.bare && filepath.Base(common) == git.GitDirName {
		main.path = filepath.Dir(common)
	}
	wts := []worktree{main}
	entries, err := os.ReadDir(filepath.Join(common, "worktrees"))
	if err != nil && !errors.Is(err, fs.ErrNotExist) {
		return nil, fmt.Errorf("list worktrees: %w", err)
	}
	for _, e := range entries {
		dir := filepath.Join(common, "worktrees", e.Name())
		path := dir
		// gitdir holds the path of the worktree's .git file.
		if b, err := os.ReadFile(filepath.Join(dir, "gitdir")); err == nil {
			path = strings.TrimSuffix(strings.TrimSpace(string(b)), "/"+git.GitDirName)
		}
		wts = append(wts, worktree{path: path, gitDir: dir})
	}
	return wts, nil
}

// commonGitDir returns the directory holding the repository's refs and
// objects: the git directory itself, or the one its commondir file names
// (when repo was opened through a linked worktree).
func commonGitDir(repo *git.Repository) (string, error) {
	fsys, err := gitDir(repo)
	if err != nil {
		return "", err
	}
	root := fsys.Root()
	b, err := os.ReadFile(filepath.Join(root, "commondir"))
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return root, nil
	case err != nil:
		return "", fmt.Errorf("read commondir: %w", err)
	}
	dir := strings.TrimSpace(string(b))
	if !filepath.IsAbs(dir) {
		dir = filepath.Join(root, dir)
	}
	return filepath.Clean(dir), nil
}

// heldBy returns the branches the worktree whose git directory is gitDir
// has checked out, or is rebasing or bisecting from.
func heldBy(gitDir string) ([]plumbing.ReferenceName, error) {
	var refs []plumbing.ReferenceName
	for _, name := range []string{"HEAD", "rebase-merge/head-name", "rebase-apply/head-name", "BISECT_START"} {
		b, err := os.ReadFile(filepath.Join(gitDir, name))
		switch {
		case errors.Is(err, fs.ErrNotExist):
			continue
		case err != nil:
			return nil, err
		}
		text := string(bytes.TrimSpace(b))
		switch name {
		case "HEAD":
			if target, ok := strings.CutPrefix(text, "ref: "); ok {
				refs = append(refs, plumbing.ReferenceName(target))
			}
		case "BISECT_START": // the short name of the branch bisect started on
			refs = append(refs, plumbing.NewBranchReferenceName(text))
		default:
			refs = append(refs, plumbing.ReferenceName(text))
		}
	}
	return refs, nil
}

// refuseCheckedOut returns a *CheckedOutError if ref is checked out in any
// worktree of repo (see checkedOut).
func refuseCheckedOut(repo *git.Repository, ref plumbing.ReferenceName) error {
	held, err := checkedOut(repo)
	if err != nil {
		return fmt.Errorf("check whether %s is checked out: %w", ref.Short(), err)
	}
	return refuseHeld(held, ref)
}

// refuseHeld returns a *CheckedOutError if held, from checkedOut, has ref.
func refuseHeld(held map[plumbing.ReferenceName]worktree, ref plumbing.ReferenceName) error {
	if wt, ok := held[ref]; ok {
		return &CheckedOutError{Branch: ref.Short(), Worktree: wt.path, Bare: wt.bare}
	}
	return nil
}

// CheckedOutError reports a branch checked out in a worktree, or the HEAD
// of a bare repository: it is never written or deleted, with or without
// force. errors.Is(err, ErrBranchCheckedOut) is true.
type CheckedOutError struct {
	Branch   string
	Worktree string // the worktree, or the bare repository
	Bare     bool
}

func (e *CheckedOutError) Error() string {
	if e.Bare {
		return fmt.Sprintf("branch %s is the HEAD of the bare repository %s; a checked-out branch is never written or deleted", e.Branch, e.Worktree)
	}
	return fmt.Sprintf("branch %s is checked out in %s; a checked-out branch is never written or deleted", e.Branch, e.Worktree)
}

// Is makes errors.Is(err, ErrBranchCheckedOut) true.
func (e *CheckedOutError) Is(target error) bool { return target == ErrBranchCheckedOut }
