package gitops

import (
	"errors"
	"fmt"
	"strings"

	"github.com/go-git/go-git/v5"
	"github.com/go-git/go-git/v5/plumbing"
)

// ErrNoCommits: the repository has no branch, tag or commit to start from.
// Inspect reports it for a local repository, Clone for a remote one.
var ErrNoCommits = errors.New("repository has no commits")

// Inspection is a local repository as a run sees it before it starts: its
// branches and tags, the branches its worktrees have checked out, and the
// names its refs take, read once so that every task of a queue is checked
// against them without a clone. What it finds can change before the task
// commits: CommitTree checks the branch again.
type Inspection struct {
	path  string
	repo  *git.Repository
	refs  []*plumbing.Reference // HEAD, branches and tags
	held  map[plumbing.ReferenceName]worktree
	index *refIndex
}

// Inspect reads the repository at path (a worktree, its .git, a bare
// repository or a linked worktree). It fails with ErrNoCommits when the
// repository has neither a branch, a tag nor a detached HEAD.
func Inspect(path string) (*Inspection, error) {
	repo, err := openRepo(path)
	if err != nil {
		return nil, err
	}
	refs, err := localRefs(repo)
	if err != nil {
		return nil, fmt.Errorf("list refs of %s: %w", path, err)
	}
	if !hasCommits(refs) {
		return nil, fmt.Errorf("%s: %w", path, ErrNoCommits)
	}
	held, err := checkedOut(repo)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	fsys, err := gitDir(repo)
	if err != nil {
		return nil, err
	}
	idx, err := readRefIndex(fsys)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	return &Inspection{path: path, repo: repo, refs: refs, held: held, index: idx}, nil
}

// hasCommits reports whether refs (from localRefs) name any commit.
func hasCommits(refs []*plumbing.Reference) bool {
	for _, r := range refs {
		if r.Type() == plumbing.HashReference {
			return true
		}
	}
	return false
}

// RefChoice is what a task's ref names in a repository.
type RefChoice struct {
	// Name is the branch or tag a clone starts from; empty for a commit
	// hash or a detached HEAD.
	Name plumbing.ReferenceName
	// Also is the tag the ref names too when Name is a branch of the same
	// short name; empty when the ref is not ambiguous.
	Also plumbing.ReferenceName
}

// Ref resolves ref as Clone does: empty is HEAD; a name is a branch, then a
// tag, as `git clone --branch` takes them (git rev-parse would prefer the
// tag: a name that is both is reported in RefChoice.Also); a full name
// (refs/heads/x, refs/tags/x) is taken as it is; anything else must be the
// hash of a commit of the repository. The error wraps ErrRefNotFound.
func (in *Inspection) Ref(ref string) (RefChoice, error) {
	target, isCommit, err := resolveCloneRef(ref, in.refs)
	if err != nil {
		return RefChoice{}, err
	}
	if isCommit {
		h, err := in.repo.ResolveRevision(plumbing.Revision(strings.ToLower(ref)))
		if err == nil {
			_, err = in.repo.CommitObject(*h)
		}
		if err != nil {
			return RefChoice{}, fmt.Errorf("%w: %q is not a branch, tag or commit of the repository", ErrRefNotFound, ref)
		}
		return RefChoice{}, nil
	}
	tip, err := in.repo.Storer.Reference(target)
	if err != nil {
		return RefChoice{}, fmt.Errorf("%w: HEAD points to %s, which has no commits; set ref to a branch, tag or commit", ErrRefNotFound, target.Short())
	}
	if _, _, err := peelToCommit(in.repo, tip.Hash()); err != nil {
		return RefChoice{}, fmt.Errorf("%w: %s does not name a commit: %w", ErrRefNotFound, target, err)
	}
	choice := RefChoice{}
	if target != plumbing.HEAD {
		choice.Name = target
	}
	if target.IsBranch() && ref != "" && !strings.HasPrefix(ref, "refs/") {
		tag := plumbing.NewTagReferenceName(ref)
		for _, r := range in.refs {
			if r.Name() == tag {
				choice.Also = tag
			}
		}
	}
	return choice, nil
}

// CheckBranch reports why a task's commit could not be written to branch:
// it is checked out in a worktree (a *CheckedOutError, whatever force
// says), or a ref stands where git would need a file or a directory (a
// *RefConflictError). That the branch exists is no error here.
func (in *Inspection) CheckBranch(branch string) error {
	ref, err := branchRef(branch)
	if err != nil {
		return err
	}
	if err := refuseHeld(in.held, ref); err != nil {
		return err
	}
	return in.index.refuse(ref)
}
