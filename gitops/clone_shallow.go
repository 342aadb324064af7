package gitops

import (
	"context"
	"fmt"
	"slices"

	"github.com/go-git/go-git/v5"
	"github.com/go-git/go-git/v5/config"
	"github.com/go-git/go-git/v5/plumbing"
	"github.com/go-git/go-git/v5/plumbing/filemode"
)

// followTags adds the tags that point into the cloned history, as a fetch
// follows them: their refs, returned, and their tag objects, appended.
func followTags(repo *git.Repository, refs []*plumbing.Reference, target plumbing.ReferenceName, commits, objects []plumbing.Hash) ([]*plumbing.Reference, []plumbing.Hash) {
	var tags []*plumbing.Reference
	for _, r := range refs {
		if !r.Name().IsTag() || r.Name() == target || r.Type() != plumbing.HashReference {
			continue
		}
		h, chain, err := peelToCommit(repo, r.Hash())
		if err != nil {
			continue
		}
		if slices.Contains(commits, h) {
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
// returns the commits, and those at the depth limit: the clone's shallow
// list.
func historyObjects(ctx context.Context, repo *git.Repository, commit plumbing.Hash, depth int) (objects, commits, shallow []plumbing.Hash, err error) {
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
				return nil, nil, nil, fmt.Errorf("commit %s: %w", h, err)
			}
			objects = append(objects, h)
			commits = append(commits, h)
			if objects, err = treeObjects(ctx, repo, c.TreeHash, seen, objects); err != nil {
				return nil, nil, nil, err
			}
			if d == depth {
				shallow = append(shallow, h)
			} else {
				next = append(next, c.ParentHashes...)
			}
		}
		level = next
	}
	return objects, commits, shallow, nil
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
