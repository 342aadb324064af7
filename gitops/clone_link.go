package gitops

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"

	"github.com/go-git/go-git/v5"
	"github.com/go-git/go-git/v5/config"
	"github.com/go-git/go-git/v5/plumbing"
)

// objectFile matches what linkObjects takes from an object store: loose
// objects and packs with their indexes.
var objectFile = regexp.MustCompile(`^([0-9a-f]{2}/[0-9a-f]{38,62}|pack/pack-[0-9a-f]{40,64}\.(pack|idx|rev))$`)

// linkObjects gives the store dst every object of src, as `git clone` of a
// path does: a hard link per file (objects are never modified in place),
// or a copy where a link cannot be made (another file system, or a file
// of another user under protected_hardlinks).
func linkObjects(src, dst string) error {
	return filepath.WalkDir(src, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, err := filepath.Rel(src, p)
		if err != nil {
			return err
		}
		rel = filepath.ToSlash(rel)
		if d.IsDir() {
			if rel == "info" {
				return filepath.SkipDir
			}
			return nil
		}
		if !d.Type().IsRegular() || !objectFile.MatchString(rel) {
			return nil
		}
		to := filepath.Join(dst, filepath.FromSlash(rel))
		if err := os.MkdirAll(filepath.Dir(to), 0o755); err != nil {
			return err
		}
		if err := os.Link(p, to); err == nil || errors.Is(err, fs.ErrExist) {
			return nil
		}
		return copyObjectFile(p, to)
	})
}

func copyObjectFile(from, to string) error {
	in, err := os.Open(from)
	if err != nil {
		return err
	}
	defer in.Close()
	out, err := os.OpenFile(to, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o444)
	if err != nil {
		return err
	}
	if _, err := io.Copy(out, in); err != nil {
		out.Close()
		return err
	}
	return out.Close()
}

// setFullRefs records what a full clone records: the origin remote with
// every branch as a remote-tracking ref, every tag, and the branch asked
// for with its upstream (or HEAD detached at the tag's or hash's commit).
func setFullRefs(repo *git.Repository, url string, refs []*plumbing.Reference, target plumbing.ReferenceName, tip, commit plumbing.Hash) error {
	var set []*plumbing.Reference
	for _, r := range refs {
		if r.Type() != plumbing.HashReference {
			continue
		}
		switch {
		case r.Name().IsBranch():
			set = append(set, plumbing.NewHashReference(plumbing.NewRemoteReferenceName(git.DefaultRemoteName, r.Name().Short()), r.Hash()))
		case r.Name().IsTag():
			set = append(set, r)
		}
	}
	cfg, err := repo.Config()
	if err != nil {
		return err
	}
	if target.IsBranch() {
		cfg.Branches[target.Short()] = &config.Branch{Name: target.Short(), Remote: git.DefaultRemoteName, Merge: target}
		set = append(set, plumbing.NewHashReference(target, tip), plumbing.NewSymbolicReference(plumbing.HEAD, target))
	} else {
		set = append(set, plumbing.NewHashReference(plumbing.HEAD, commit))
	}
	for _, r := range set {
		if err := repo.Storer.SetReference(r); err != nil {
			return fmt.Errorf("set %s: %w", r.Name(), err)
		}
	}
	cfg.Remotes[git.DefaultRemoteName] = &config.RemoteConfig{
		Name: git.DefaultRemoteName, URLs: []string{url},
		Fetch: []config.RefSpec{config.RefSpec(fmt.Sprintf("+refs/heads/*:refs/remotes/%s/*", git.DefaultRemoteName))},
	}
	return repo.Storer.SetConfig(cfg)
}
