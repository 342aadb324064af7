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
	"github.com/go-git/go-git/v5/config"
	"github.com/go-git/go-git/v5/plumbing"
	"github.com/go-git/go-git/v5/plumbing/cache"
	"github.com/go-git/go-git/v5/plumbing/filemode"
	"github.com/go-git/go-git/v5/plumbing/transport"
	"github.com/go-git/go-git/v5/storage/filesystem"
)

// localGitDir returns the git directory of the repository that url names
// by a path or a file:// URL, or "" when Clone should use the pack
// protocol: a remote URL, no repository there, a worktree whose .git is a
// file, or an object store with alternates.
func localGitDir(url string) string {
	ep, err := transport.NewEndpoint(url)
	if err != nil || ep.Protocol != "file" {
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
// keeping its packs open while in use. close releases them.
func openLocal(gitDir string) (repo *git.Repository, close func(), err error) {
	st := filesystem.NewStorageWithOptions(osfs.New(gitDir), cache.NewObjectLRUDefault(),
		filesystem.Options{KeepDescriptors: true})
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
		if objects, boundary, err = historyObjects(ctx, src, commit, opts.Depth); err != nil {
			return nil, err
		}
		tags, objects = followTags(src, refs, target, objects)
		objects = append(objects, chain...)
	}

	repo, err := git.PlainInit(opts.Dir, false)
	if err != nil {
		return nil, err
	}
	objDir := filepath.Join(opts.Dir, git.GitDirName, "objects")
	filled := make(chan error, 1)
	if shallow {
		// The pack is written from a second handle on the source: go-git's
		// readers of one store are not safe for concurrent use.
		packSrc, closePackSrc, err := openLocal(gitDir)
		if err != nil {
			return nil, fmt.Errorf("open %s: %w", url, err)
		}
		go func() {
			defer closePackSrc()
			reuse := openSourcePacks(filepath.Join(gitDir, "objects"))
			defer reuse.Close()
			if err := writePack(objDir, packSrc.Storer, reuse, objects); err != nil {
				filled <- fmt.Errorf("write pack: %w", err)
			}
			close(filled)
		}()
	} else {
		go func() {
			if err := linkObjects(filepath.Join(gitDir, "objects"), objDir); err != nil {
				filled <- fmt.Errorf("copy objects: %w", err)
			}
			close(filled)
		}()
	}
	err = checkoutFresh(src, repo.Storer, opts.Dir, commit)
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
	return &Workspace{Dir: opts.Dir, Base: commit, Ref: target, RemoteURL: url, Shallow: shallow}, nil
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

// followTags adds the tags that point into the cloned history, as a fetch
// follows them: their refs, returned, and their tag objects, appended.
func followTags(repo *git.Repository, refs []*plumbing.Reference, target plumbing.ReferenceName, objects []plumbing.Hash) ([]*plumbing.Reference, []plumbing.Hash) {
	commits := map[plumbing.Hash]bool{}
	for _, h := range objects {
		if _, err := repo.CommitObject(h); err == nil {
			commits[h] = true
		}
	}
	var tags []*plumbing.Reference
	for _, r := range refs {
		if !r.Name().IsTag() || r.Name() == target || r.Type() != plumbing.HashReference {
			continue
		}
		h, chain, err := peelToCommit(repo, r.Hash())
		if err != nil {
			continue
		}
		if commits[h] {
			tags = append(tags, r)
			for _, t := range chain {
				if !slices.Contains(objects, t) {
					objects = append(objects, t)
				}
			}
		}
	}
	return tags, objects
}

// historyObjects lists the objects of the history of commit to depth
// commits: the commits and every tree and blob of their trees. It also
// returns the commits at the depth limit, the clone's shallow list.
func historyObjects(ctx context.Context, repo *git.Repository, commit plumbing.Hash, depth int) (objects, shallow []plumbing.Hash, err error) {
	seen := map[plumbing.Hash]bool{}
	level := []plumbing.Hash{commit}
	for d := 1; len(level) > 0; d++ {
		var next []plumbing.Hash
		for _, h := range level {
			if seen[h] {
				continue
			}
			seen[h] = true
			c, err := repo.CommitObject(h)
			if err != nil {
				return nil, nil, fmt.Errorf("commit %s: %w", h, err)
			}
			objects = append(objects, h)
			if objects, err = treeObjects(ctx, repo, c.TreeHash, seen, objects); err != nil {
				return nil, nil, err
			}
			if d == depth {
				shallow = append(shallow, h)
			} else {
				next = append(next, c.ParentHashes...)
			}
		}
		level = next
	}
	return objects, shallow, nil
}

// treeObjects appends the tree h and everything under it not yet seen.
// Submodules are commits of other repositories: not copied.
func treeObjects(ctx context.Context, repo *git.Repository, h plumbing.Hash, seen map[plumbing.Hash]bool, objects []plumbing.Hash) ([]plumbing.Hash, error) {
	if seen[h] {
		return objects, nil
	}
	if err := ctx.Err(); err != nil {
		return objects, err
	}
	seen[h] = true
	t, err := repo.TreeObject(h)
	if err != nil {
		return objects, fmt.Errorf("tree %s: %w", h, err)
	}
	objects = append(objects, h)
	for _, e := range t.Entries {
		switch {
		case e.Mode == filemode.Dir:
			if objects, err = treeObjects(ctx, repo, e.Hash, seen, objects); err != nil {
				return objects, err
			}
		case e.Mode == filemode.Submodule, seen[e.Hash]:
		default:
			seen[e.Hash] = true
			objects = append(objects, e.Hash)
		}
	}
	return objects, nil
}

// setShallowRefs records what a single-branch shallow clone of target
// records: the origin remote and its fetch refspec, the branch and its
// upstream (or the tag, with HEAD detached at its commit), the tags
// followed, and the shallow list.
func setShallowRefs(repo *git.Repository, url string, target plumbing.ReferenceName, tip, commit plumbing.Hash, shallow []plumbing.Hash, tags []*plumbing.Reference) error {
	for _, t := range tags {
		if err := repo.Storer.SetReference(t); err != nil {
			return err
		}
	}
	cfg, err := repo.Config()
	if err != nil {
		return err
	}
	spec := config.RefSpec(fmt.Sprintf("+refs/heads/*:refs/remotes/%s/*", git.DefaultRemoteName))
	set := []*plumbing.Reference{plumbing.NewHashReference(plumbing.HEAD, commit)}
	switch {
	case target.IsBranch():
		remoteRef := plumbing.NewRemoteReferenceName(git.DefaultRemoteName, target.Short())
		spec = config.RefSpec(fmt.Sprintf("+%s:%s", target, remoteRef))
		cfg.Branches[target.Short()] = &config.Branch{Name: target.Short(), Remote: git.DefaultRemoteName, Merge: target}
		set = []*plumbing.Reference{
			plumbing.NewHashReference(remoteRef, tip),
			plumbing.NewHashReference(target, tip),
			plumbing.NewSymbolicReference(plumbing.HEAD, target),
		}
	case target != "": // a tag; HEAD detached at its commit
		spec = config.RefSpec(fmt.Sprintf("+%s:%s", target, target))
		set = append(set, plumbing.NewHashReference(target, tip))
	}
	for _, r := range set {
		if err := repo.Storer.SetReference(r); err != nil {
			return err
		}
	}
	cfg.Remotes[git.DefaultRemoteName] = &config.RemoteConfig{
		Name: git.DefaultRemoteName, URLs: []string{url}, Fetch: []config.RefSpec{spec},
	}
	if err := repo.Storer.SetConfig(cfg); err != nil {
		return err
	}
	return repo.Storer.SetShallow(shallow)
}
