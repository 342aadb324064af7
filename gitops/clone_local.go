package gitops

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/go-git/go-billy/v5/osfs"
	"github.com/go-git/go-git/v5"
	"github.com/go-git/go-git/v5/plumbing"
	"github.com/go-git/go-git/v5/plumbing/transport"
	"github.com/go-git/go-git/v5/storage/filesystem"

	"github.com/runner-dev/runner/internal/panics"
)

// localGitDir returns the git directory of the repository that url names
// by a path or a file:// URL, or "" when Clone should use the pack
// protocol: a remote URL, no repository there, a worktree whose .git is a
// file, or an object store with alternates.
func localGitDir(url string) string {
	ep, err := transport.NewEndpoint(url)
	if err != nil || ep.Protocol != "file" || ep.Host != "" {
		return ""
	}
	for _, dir := range []string{filepath.Join(ep.Path, git.GitDirName), ep.Path} {
		objects, err := os.Stat(filepath.Join(dir, "objects"))
		if err != nil || !objects.IsDir() {
			continue
		}
		if _, err := os.Stat(filepath.Join(dir, "HEAD")); err != nil {
			continue
		}
		if _, err := os.Stat(filepath.Join(dir, "objects", "info", "alternates")); err == nil {
			return ""
		}
		return dir
	}
	return ""
}

// openLocal opens the object store and refs of a repository read-only,
// keeping its packs open while in use, with steady listings (see
// steadyFS): the batch's other tasks commit to it meanwhile. close
// releases them.
func openLocal(gitDir string) (repo *git.Repository, close func(), err error) {
	st := steadyStorage(osfs.New(gitDir), filesystem.Options{KeepDescriptors: true})
	repo, err = git.Open(st, nil)
	if err != nil {
		st.Close()
		return nil, nil, err
	}
	return repo, func() { st.Close() }, nil
}

// cloneLocal clones the repository in gitDir, on this machine, without the
// pack protocol. It checks the tree out from the source's object store (on
// several goroutines) while it fills the clone's store (on another): for a
// shallow clone, a new pack of only the objects of the requested history,
// so that the clone exposes no other branch; for a full one, links to the
// source's packs and objects, as `git clone` of a path does. Then it sets
// the refs, config and shallow list a clone has.
func cloneLocal(ctx context.Context, gitDir string, opts CloneOptions, url string) (*Workspace, error) {
	src, closeSrc, err := openLocal(gitDir)
	if err != nil {
		return nil, fmt.Errorf("open %s: %w", url, err)
	}
	defer closeSrc()
	refs, err := localRefs(src)
	if err != nil {
		return nil, fmt.Errorf("list refs of %s: %w", url, err)
	}
	if !hasCommits(refs) {
		return nil, ErrNoCommits
	}
	target, isCommit, err := resolveCloneRef(opts.Ref, refs)
	if err != nil {
		return nil, err
	}
	var tip plumbing.Hash
	switch {
	case isCommit:
		h, err := src.ResolveRevision(plumbing.Revision(strings.ToLower(opts.Ref)))
		if err == nil {
			_, err = src.CommitObject(*h)
		}
		if err != nil {
			return nil, fmt.Errorf("%w: commit %q not found in the repository", ErrRefNotFound, opts.Ref)
		}
		tip, target = *h, ""
	default: // a branch, a tag, or HEAD when the source's is detached
		ref, err := src.Storer.Reference(target)
		if err != nil {
			return nil, fmt.Errorf("resolve %s: %w", target, err)
		}
		tip = ref.Hash()
		if target == plumbing.HEAD {
			target = ""
		}
	}
	// As over the protocol: a commit hash always gets the whole history.
	shallow := opts.Depth > 0 && !isCommit
	var objects, boundary []plumbing.Hash
	var tags []*plumbing.Reference
	commit, chain, err := peelToCommit(src, tip)
	if err != nil {
		return nil, err
	}
	if shallow {
		var commits []plumbing.Hash
		if objects, commits, boundary, err = historyObjects(ctx, src, commit, opts.Depth); err != nil {
			return nil, err
		}
		tags, objects = followTags(src, refs, target, commits, objects)
		for _, t := range chain {
			if !slices.Contains(objects, t) {
				objects = append(objects, t)
			}
		}
	}

	repo, err := git.PlainInit(opts.Dir, false)
	if err != nil {
		return nil, err
	}
	filled := fillStore(ctx, gitDir, opts.Dir, shallow, objects)
	notes, err := checkoutFresh(ctx, src, repo.Storer, opts.Dir, commit)
	if ferr := <-filled; ferr != nil && err == nil {
		err = ferr
	}
	if err == nil {
		err = ctx.Err()
	}
	if err == nil && shallow {
		err = setShallowRefs(repo, url, target, tip, commit, boundary, tags)
	} else if err == nil {
		err = setFullRefs(repo, url, refs, target, tip, commit)
	}
	if err != nil {
		return nil, err
	}
	return &Workspace{Dir: opts.Dir, Base: commit, Ref: target, RemoteURL: url, Shallow: shallow, Warnings: notes}, nil
}

// fillStore gives the clone in dir its objects from the store in gitDir, on
// a goroutine, and reports on the channel when done: a pack of the listed
// objects for a shallow clone, links to every object for a full one.
func fillStore(ctx context.Context, gitDir, dir string, shallow bool, objects []plumbing.Hash) <-chan error {
	from, to := filepath.Join(gitDir, "objects"), filepath.Join(dir, git.GitDirName, "objects")
	return panics.Go(ctx, func() error {
		if !shallow {
			if err := linkObjects(from, to); err != nil {
				return fmt.Errorf("copy objects: %w", err)
			}
			return nil
		}
		// A second handle on the source: go-git's readers of one store are
		// not safe for concurrent use, and the checkout reads the first.
		src, closeSrc, err := openLocal(gitDir)
		if err == nil {
			reuse := openSourcePacks(from)
			err = writePack(ctx, to, src.Storer, reuse, objects, false)
			reuse.Close()
			closeSrc()
		}
		if err != nil {
			return fmt.Errorf("write pack: %w", err)
		}
		return nil
	})
}

// peelToCommit follows annotated tags from h to the commit they name, and
// returns the tags on the way.
func peelToCommit(repo *git.Repository, h plumbing.Hash) (commit plumbing.Hash, tags []plumbing.Hash, err error) {
	for range 16 {
		tag, err := repo.TagObject(h)
		if errors.Is(err, plumbing.ErrObjectNotFound) {
			break
		}
		if err != nil {
			return h, nil, err
		}
		tags = append(tags, h)
		h = tag.Target
	}
	if _, err := repo.CommitObject(h); err != nil {
		return h, nil, fmt.Errorf("commit %s: %w", h, err)
	}
	return h, tags, nil
}

// localRefs lists the branches and tags of a repository, and its HEAD.
func localRefs(repo *git.Repository) ([]*plumbing.Reference, error) {
	return settledRefs(func() ([]*plumbing.Reference, error) { return readLocalRefs(repo) })
}

func readLocalRefs(repo *git.Repository) ([]*plumbing.Reference, error) {
	var refs []*plumbing.Reference
	if head, err := repo.Storer.Reference(plumbing.HEAD); err == nil {
		refs = append(refs, head)
	}
	iter, err := repo.Storer.IterReferences()
	if err != nil {
		return nil, err
	}
	err = iter.ForEach(func(r *plumbing.Reference) error {
		if n := r.Name(); n.IsBranch() || n.IsTag() {
			refs = append(refs, r)
		}
		return nil
	})
	return refs, err
}
