package gitops

import (
	"context"
	"fmt"
	"path"
	"slices"
	"strings"
)

// excludeRules prepends the patterns of CommitOptions.Exclude to the
// repository's info/exclude: they are read as git reads core.excludesFile,
// whose rules have the lowest precedence of all (below info/exclude and
// every .gitignore), so a repository's "!pattern" re-includes what they
// leave out. Like any ignore rule they never hide a tracked path.
func excludeRules(patterns []string, infoExclude []byte) ([]byte, error) {
	var b strings.Builder
	for _, p := range patterns {
		if strings.ContainsAny(p, "\n\r") {
			return nil, fmt.Errorf("exclude pattern %q: a pattern is one line", p)
		}
		b.WriteString(p)
		b.WriteByte('\n')
	}
	b.Write(infoExclude)
	return []byte(b.String()), nil
}

// excludedPaths lists what the exclude patterns alone left out of files:
// the paths the repository's own rules (repoRules: its .gitignore files
// and info/exclude) would have committed. A directory whose every file is
// left out, and no committed file lies below, is listed once as "dir/",
// the way `git status --ignored` lists it; n counts the files.
func excludedPaths(ctx context.Context, base map[string]treeEntry, snap *snapshot, files map[string]treeEntry, all, repoRules *ignoreRules) (list []string, n int, err error) {
	wanted, err := planTree(ctx, base, snap, repoRules, nestedRepos(base, snap, repoRules))
	if err != nil {
		return nil, 0, err
	}
	committedDirs := make(map[string]bool)
	for p := range files {
		for d := path.Dir(p); d != "." && !committedDirs[d]; d = path.Dir(d) {
			committedDirs[d] = true
		}
	}
	seen := make(map[string]bool)
	for p := range wanted {
		if _, kept := files[p]; kept {
			continue
		}
		n++
		name := p
		for d := path.Dir(p); d != "."; d = path.Dir(d) {
			if all.dirExcluded(d) && !repoRules.dirExcluded(d) && !committedDirs[d] {
				name = d + "/"
			}
		}
		if !seen[name] {
			seen[name] = true
			list = append(list, name)
		}
	}
	// Entries dropped unread inside excluded directories: the directories
	// only the exclude list excludes were left out by it.
	for root, files := range snap.dropped.roots {
		if repoRules.dirExcluded(root) {
			continue
		}
		n += files
		names := []string{root + "/"}
		if committedDirs[root] {
			names = snap.dropped.names[root] // the directory keeps committed files
		}
		for _, name := range names {
			if !seen[name] {
				seen[name] = true
				list = append(list, name)
			}
		}
	}
	slices.Sort(list)
	return list, n, nil
}
