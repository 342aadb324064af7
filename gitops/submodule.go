package gitops

import (
	"context"
	"fmt"
	"io"
	"path"
	"slices"
	"strings"

	"github.com/go-git/go-git/v5"
	"github.com/go-git/go-git/v5/config"
	"github.com/go-git/go-git/v5/plumbing/filemode"
)

// noteDotGit records the directory holding the git directory (or gitfile)
// that the snapshot entry name lies in: the first component spelled
// exactly ".git", which is what git itself looks for. The workspace's own
// .git is not a nested repository.
func (s *snapshot) noteDotGit(name string) {
	comps := strings.Split(name, "/")
	i := slices.Index(comps, ".git")
	if i <= 0 {
		return
	}
	if s.nestedGit == nil {
		s.nestedGit = make(map[string]bool)
	}
	s.nestedGit[strings.Join(comps[:i], "/")] = true
}

// nestedRepos returns the untracked directories that hold a .git of their
// own and that `git add -A` would record as a gitlink to their HEAD commit
// (or fail on, when there is none): not ignored, not holding a tracked
// path, not a submodule of base, and not inside another such directory.
// runner never reads the agent's .git directories, so it cannot know that
// commit; such a directory is left out of the commit whole, and reported.
func nestedRepos(base map[string]treeEntry, snap *snapshot, ig *ignoreRules) map[string]bool {
	if len(snap.nestedGit) == 0 {
		return nil
	}
	trackedDirs := make(map[string]bool)
	gitlinks := make(map[string]bool)
	for p, e := range base {
		if e.mode == filemode.Submodule {
			gitlinks[p] = true
		}
		for dir := path.Dir(p); dir != "." && !trackedDirs[dir]; dir = path.Dir(dir) {
			trackedDirs[dir] = true
		}
	}
	cands := make(map[string]bool)
	for d := range snap.nestedGit {
		if gitlinks[d] || trackedDirs[d] || underAny(gitlinks, d) || ig.dirExcluded(d) {
			continue
		}
		cands[d] = true
	}
	out := make(map[string]bool)
	for d := range cands {
		if !underAny(cands, d) {
			out[d] = true
		}
	}
	return out
}

// planCommit plans the tree of the commit: the snapshot's files converted
// as their attributes ask (applyAttributes), then the index `git add -A`
// would write (planTree). The warnings say where the result differs from
// what the agent may expect, or from git: nested repositories left out,
// content inside submodules, submodules removed while .gitmodules still
// lists them, attributes not applied.
func planCommit(ctx context.Context, repo *git.Repository, base map[string]treeEntry, snap *snapshot, ig *ignoreRules) (map[string]treeEntry, []string, error) {
	attrs, err := applyAttributes(ctx, repo, base, snap)
	if err != nil {
		return nil, nil, err
	}
	nested := nestedRepos(base, snap, ig)
	files, err := planTree(ctx, base, snap, ig, nested)
	if err != nil {
		return nil, nil, err
	}
	var warnings []string
	warnings = append(warnings, nestedWarnings(base, snap, files, nested)...)
	warnings = append(warnings, gitmodulesWarnings(repo, snap, base, files)...)
	var unusual attrNotes
	if !attrs.empty() {
		for p, f := range files {
			if b, ok := base[p]; (ok && b == f) || objectType(f.mode) != filemode.Regular {
				continue
			}
			if err := ctx.Err(); err != nil {
				return nil, nil, err
			}
			unusual.record(p, attrs.lookup(p))
		}
	}
	warnings = append(warnings, unusual.list("committed as the workspace holds them")...)
	return files, warnings, nil
}

// nestedWarnings describes the content left out below nested repositories
// and kept submodules.
func nestedWarnings(base map[string]treeEntry, snap *snapshot, files map[string]treeEntry, nested map[string]bool) []string {
	kept := make(map[string]bool)
	for p, e := range files {
		if e.mode == filemode.Submodule {
			kept[p] = true
		}
	}
	inside := make(map[string]int) // files below each kept gitlink or nested repository
	for p, e := range snap.entries {
		if e.kind == kindDir {
			continue
		}
		for dir := path.Dir(p); dir != "."; dir = path.Dir(dir) {
			if kept[dir] || nested[dir] {
				inside[dir]++
				break
			}
		}
	}
	var out []string
	if len(nested) > 0 {
		dirs := sortedKeys(nested)
		n := 0
		for _, d := range dirs {
			n += inside[d]
		}
		out = append(out, fmt.Sprintf("%s left out (%d files not committed): git add -A records a directory with a .git of its own "+
			"as a gitlink to its HEAD commit, which runner cannot know: it never reads the workspace's .git directories",
			countPaths(dirs, "nested repository", "nested repositories"), n))
	}
	var withFiles, withGit []string
	for _, d := range sortedKeys(kept) {
		if inside[d] > 0 {
			withFiles = append(withFiles, d)
		}
		if snap.nestedGit[d] {
			withGit = append(withGit, d)
		}
	}
	if len(withFiles) > 0 {
		out = append(out, fmt.Sprintf("files inside %s are not committed: a submodule's content belongs to its own repository, and git add -A leaves it out too",
			countPaths(withFiles, "submodule", "submodules")))
	}
	if len(withGit) > 0 {
		out = append(out, fmt.Sprintf("%s: the workspace has a .git inside, which runner never reads; the gitlink keeps the base commit, so a commit checked out or made inside is not recorded",
			countPaths(withGit, "submodule", "submodules")))
	}
	return out
}

// gitmodulesWarnings names the submodules of base the commit removes (or
// turns into a file) while the committed .gitmodules still describes them.
func gitmodulesWarnings(repo *git.Repository, snap *snapshot, base, files map[string]treeEntry) []string {
	var gone []string
	for p, e := range base {
		if e.mode == filemode.Submodule && files[p].mode != filemode.Submodule {
			gone = append(gone, p)
		}
	}
	f, ok := files[".gitmodules"]
	if len(gone) == 0 || !ok || objectType(f.mode) != filemode.Regular {
		return nil
	}
	var content []byte
	if e, ok := snap.entries[".gitmodules"]; ok && e.hash == f.hash {
		r, err := snap.raw(repo, e)
		if err != nil {
			return nil
		}
		content, err = io.ReadAll(io.LimitReader(r, attrMaxFile))
		r.Close()
		if err != nil {
			return nil
		}
	} else {
		return nil
	}
	m := config.NewModules()
	if m.Unmarshal(content) != nil {
		return nil
	}
	listed := make(map[string]bool)
	for _, s := range m.Submodules {
		listed[s.Path] = true
	}
	var stale []string
	for _, p := range gone {
		if listed[p] {
			stale = append(stale, p)
		}
	}
	if len(stale) == 0 {
		return nil
	}
	slices.Sort(stale)
	pronoun := "it"
	if len(stale) > 1 {
		pronoun = "them"
	}
	return []string{fmt.Sprintf("%s removed, but .gitmodules still describes %s (the default policy protects .gitmodules: edit it yourself)",
		countPaths(stale, "submodule", "submodules"), pronoun)}
}

func sortedKeys(m map[string]bool) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	return keys
}

// countPaths says "submodule \"a\"" or "3 submodules (\"a\", \"b\", \"c\"
// and 2 more)".
func countPaths(paths []string, one, many string) string {
	if len(paths) == 1 {
		return fmt.Sprintf("%s %q", one, paths[0])
	}
	shown := paths[:min(len(paths), maxNotePaths)]
	more := ""
	if len(paths) > len(shown) {
		more = fmt.Sprintf(" and %d more", len(paths)-len(shown))
	}
	return fmt.Sprintf("%d %s (%s%s)", len(paths), many, strings.Join(quoteAll(shown), ", "), more)
}
