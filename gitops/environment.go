package gitops

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"strings"
	"sync"

	git "github.com/go-git/go-git/v5"
	"github.com/go-git/go-git/v5/plumbing"
	"github.com/go-git/go-git/v5/plumbing/object"
)

// ErrCacheKeyFile is a cache_key file that the base commit does not have.
var ErrCacheKeyFile = errors.New("not in the base commit")

// ContentKey describes the content an environment depends on: the tree
// hash of the base commit, or, given files (lockfiles), the path, mode and
// blob hash of each in that commit. A file the commit does not have is
// ErrCacheKeyFile.
func ContentKey(dir string, base plumbing.Hash, files []string) (string, error) {
	repo, err := git.PlainOpen(dir)
	if err != nil {
		return "", fmt.Errorf("open clone: %w", err)
	}
	commit, err := repo.CommitObject(base)
	if err != nil {
		return "", fmt.Errorf("read base commit: %w", err)
	}
	if len(files) == 0 {
		return "tree " + commit.TreeHash.String(), nil
	}
	tree, err := commit.Tree()
	if err != nil {
		return "", fmt.Errorf("read base tree: %w", err)
	}
	var b strings.Builder
	for _, f := range files {
		e, err := tree.FindEntry(f)
		if errors.Is(err, object.ErrEntryNotFound) || errors.Is(err, object.ErrDirectoryNotFound) {
			return "", fmt.Errorf("%s: %w %s", f, ErrCacheKeyFile, base.String()[:12])
		}
		if err != nil {
			return "", fmt.Errorf("cache_key %s: %w", f, err)
		}
		fmt.Fprintf(&b, "%s %o %s\n", f, uint32(e.Mode), e.Hash)
	}
	return b.String(), nil
}

// IgnoredAdditions returns a test of the paths a command added to the
// clone in dir: it holds for a path (slash-separated, relative to dir)
// that the clone does not have and that git add -A would leave out, by the
// clone's .gitignore files, its info/exclude and exclude (patterns read as
// core.excludesFile). For a directory it holds when the directory itself
// is excluded, so all it holds is left out. The test is safe for
// concurrent use.
func IgnoredAdditions(dir string, exclude []string) (func(p string, isDir bool) bool, error) {
	files := map[string][]byte{}
	err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() && d.Name() == ".git" {
			return filepath.SkipDir
		}
		if d.Type().IsRegular() && d.Name() == ".gitignore" {
			rel, err := filepath.Rel(dir, filepath.Dir(p))
			if err != nil {
				return err
			}
			if rel == "." {
				rel = ""
			}
			content, err := os.ReadFile(p)
			if err != nil {
				return err
			}
			files[filepath.ToSlash(rel)] = content
		}
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("read the clone's ignore files: %w", err)
	}
	info, err := os.ReadFile(filepath.Join(dir, ".git", "info", "exclude"))
	if err != nil && !errors.Is(err, fs.ErrNotExist) {
		return nil, err
	}
	ig, err := newIgnoreRules(info, files)
	if err != nil {
		return nil, err
	}
	if len(exclude) > 0 {
		if err := ig.addExclude("exclude", []byte(strings.Join(exclude, "\n")+"\n")); err != nil {
			return nil, err
		}
	}
	var mu sync.Mutex
	return func(p string, isDir bool) bool {
		if p == "" || path.Clean(p) != p || strings.HasPrefix(p, "../") || p == ".." || path.IsAbs(p) {
			return false
		}
		if _, err := os.Lstat(filepath.Join(dir, filepath.FromSlash(p))); !errors.Is(err, fs.ErrNotExist) {
			return false
		}
		mu.Lock()
		defer mu.Unlock()
		if isDir {
			return ig.dirExcluded(p)
		}
		return ig.ignored(p)
	}, nil
}
