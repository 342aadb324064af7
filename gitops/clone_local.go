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

// errUseTransport sends a local clone back to the pack protocol.
var errUseTransport = errors.New("clone through the pack protocol")

// localGitDir returns the git directory of the repository that url names
// by a plain path (not file://, which goes through the pack protocol, as
// with git), or "" when Clone should use the protocol: not a plain path, no
// repository there, a worktree whose .git is a file, or an object store
// with alternates.
func localGitDir(url string) string {
	if strings.Contains(url, "://") {
		return ""
	}
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

// cloneLocal makes the shallow clone of a branch or tag of the repository
// in gitDir, on this machine, without the pack protocol: it walks the
// commit's tree in the source, writes those objects into a pack of the
// clone (on one goroutine) while it checks the tree out (on others), and
// sets the refs, config and shallow list a clone has. Only the objects of
// the requested history are copied: the clone exposes no other branch.
// It returns errUseTransport for what it does not handle (a commit hash, a
// detached HEAD), before writing anything.
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
	if isCommit || !target.IsBranch() && !target.IsTag() {
		return nil, errUseTransport
	}
	ref, err := src.Storer.Reference(target)
	if err != nil {
		return nil, fmt.Errorf("resolve %s: %w", target, err)
	}
	tip := ref.Hash()
	objects, commit, shallow, err := historyObjects(ctx, src, tip, opts.Depth)
	if err != nil {
		return nil, err
	}
	tags, objects := followTags(src, refs, target, objects)

	repo, err := git.PlainInit(opts.Dir, false)
	if err != nil {
		return nil, err
	}
	// The pack is written from a second handle on the source: go-git's
	// readers of one store are not safe for concurrent use.
	packSrc, closePackSrc, err := openLocal(gitDir)
	if err != nil {
		return nil, fmt.Errorf("open %s: %w", url, err)
	}
	packed := make(chan error, 1)
	go func() {
		defer closePackSrc()
		reuse := openSourcePacks(filepath.Join(gitDir, "objects"))
		defer reuse.Close()
		packed <- writePack(filepath.Join(opts.Dir, git.GitDirName, "objects"), packSrc.Storer, reuse, objects)
	}()
	err = checkoutFresh(src, repo.Storer, opts.Dir, commit)
	if perr := <-packed; perr != nil && err == nil {
		err = fmt.Errorf("write pack: %w", perr)
	}
	if err == nil {
		err = ctx.Err()
	}
	if err == nil {
		err = setCloneRefs(repo, url, target, tip, commit, shallow)
	}
	for _, t := range tags {
		if err == nil {
			err = repo.Storer.SetReference(t)
		}
	}
	if err != nil {
		return nil, err
	}
	ws := &Workspace{Dir: opts.Dir, Base: commit, Ref: target, RemoteURL: url, Shallow: true}
	return ws, nil
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
		h, chain := r.Hash(), []plumbing.Hash(nil)
		for range 16 {
			tag, err := repo.TagObject(h)
			if err != nil {
				break
			}
			chain = append(chain, h)
			h = tag.Target
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

// historyObjects lists the objects of the history of tip to depth commits:
// annotated tags on the way to the commit, the commits, and every tree and
// blob of their trees. It returns the commit tip names and the commits at
// the depth limit, the clone's shallow list.
func historyObjects(ctx context.Context, repo *git.Repository, tip plumbing.Hash, depth int) (objects []plumbing.Hash, commit plumbing.Hash, shallow []plumbing.Hash, err error) {
	commit = tip
	for range 16 {
		tag, err := repo.TagObject(commit)
		if errors.Is(err, plumbing.ErrObjectNotFound) {
			break
		}
		if err != nil {
			return nil, commit, nil, err
		}
		objects = append(objects, commit)
		commit = tag.Target
	}
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
				return nil, commit, nil, fmt.Errorf("commit %s: %w", h, err)
			}
			objects = append(objects, h)
			if objects, err = treeObjects(ctx, repo, c.TreeHash, seen, objects); err != nil {
				return nil, commit, nil, err
			}
			if d == depth {
				shallow = append(shallow, h)
			} else {
				next = append(next, c.ParentHashes...)
			}
		}
		level = next
	}
	return objects, commit, shallow, nil
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

// setCloneRefs records what a single-branch clone of target records: the
// origin remote and its fetch refspec, the branch and its upstream (or the
// tag, with HEAD detached at its commit), and the shallow list.
func setCloneRefs(repo *git.Repository, url string, target plumbing.ReferenceName, tip, commit plumbing.Hash, shallow []plumbing.Hash) error {
	cfg, err := repo.Config()
	if err != nil {
		return err
	}
	spec := config.RefSpec(fmt.Sprintf("+%s:%s", target, target))
	if target.IsBranch() {
		remoteRef := plumbing.NewRemoteReferenceName(git.DefaultRemoteName, target.Short())
		spec = config.RefSpec(fmt.Sprintf("+%s:%s", target, remoteRef))
		cfg.Branches[target.Short()] = &config.Branch{Name: target.Short(), Remote: git.DefaultRemoteName, Merge: target}
		for _, r := range []*plumbing.Reference{
			plumbing.NewHashReference(remoteRef, tip),
			plumbing.NewHashReference(target, tip),
			plumbing.NewSymbolicReference(plumbing.HEAD, target),
		} {
			if err := repo.Storer.SetReference(r); err != nil {
				return err
			}
		}
	} else {
		for _, r := range []*plumbing.Reference{
			plumbing.NewHashReference(target, tip),
			plumbing.NewHashReference(plumbing.HEAD, commit),
		} {
			if err := repo.Storer.SetReference(r); err != nil {
				return err
			}
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
