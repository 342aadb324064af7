package gitops

import (
	"bytes"
	"context"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// initRepo makes dir a repository with one commit of its files, as an
// agent running `git init && git commit` there would.
func initRepo(t *testing.T, dir string) {
	t.Helper()
	gitRun(t, dir, "init", "-q", ".")
	gitRun(t, dir, "add", "-A")
	gitRun(t, dir, "commit", "-q", "--allow-empty", "-m", "nested")
}

// TestCommitTreeNestedRepositories: `git add -A` records an untracked
// directory holding a repository as a gitlink to that repository's HEAD.
// runner never reads the agent's .git directories, so it leaves such a
// directory out and says so; everything else is what git records. A .git
// inside a directory holding tracked files, or below an ignored one,
// changes nothing, as for git.
func TestCommitTreeNestedRepositories(t *testing.T) {
	repo, base := newRepo(t, map[string]file{
		"a.txt": {content: "a\n"}, "src/x.go": {content: "x\n"}, ".gitignore": {content: "ignored-dir/\n"},
	})
	checkout := filepath.Join(t.TempDir(), "checkout")
	gitRun(t, repo, "clone", "-q", "--no-local", repo, checkout)
	writeFiles(t, checkout, map[string]file{
		"nested/f.txt":                 {content: "f\n"},
		"nested/sub/g.txt":             {content: "g\n"},
		"src/new.go":                   {content: "new\n"},
		"src/inner/i.go":               {content: "i\n"},
		"plain/file.txt":               {content: "p\n"},
		"plain/deep/repo/r.txt":        {content: "r\n"},
		"ignored-dir/repo/x.txt":       {content: "x\n"},
		"nested/inner-again/h.txt":     {content: "h\n"},
		"a.txt":                        {content: "changed\n"},
		"plain/deep/repo/also/j.txt":   {content: "j\n"},
		"plain/deep/sibling/k.txt":     {content: "k\n"},
		"src/inner/nested-deeper/l.go": {content: "l\n"},
	})
	for _, d := range []string{"nested/inner-again", "nested", "src", "src/inner", "plain/deep/repo", "ignored-dir/repo", "src/inner/nested-deeper"} {
		initRepo(t, filepath.Join(checkout, d))
	}
	snap := tarDir(t, checkout)
	gitRun(t, checkout, "add", "-A")
	gitTree := gitRun(t, checkout, "ls-tree", "-r", gitRun(t, checkout, "write-tree"))

	res, err := CommitTree(context.Background(), repo, base, bytes.NewReader(snap), CommitOptions{Branch: "runner/nested"})
	if err != nil {
		t.Fatal(err)
	}
	leftOut := []string{"nested", "plain/deep/repo", "src/inner"}
	var want []string
	for line := range strings.SplitSeq(gitTree, "\n") {
		if strings.HasPrefix(line, "160000 ") && slices.Contains(leftOut, line[strings.IndexByte(line, '\t')+1:]) {
			continue
		}
		want = append(want, line)
	}
	if len(want) != len(strings.Split(gitTree, "\n"))-len(leftOut) {
		t.Fatalf("git add -A did not record the three nested repositories as gitlinks:\n%s", gitTree)
	}
	if got := gitRun(t, repo, "ls-tree", "-r", res.Hash.String()); got != strings.Join(want, "\n") {
		t.Errorf("tree:\n%s\nwant git's without the nested repositories:\n%s", got, strings.Join(want, "\n"))
	}
	wantWarning := `3 nested repositories ("nested", "plain/deep/repo", "src/inner") left out (7 files not committed)`
	if len(res.Warnings) != 1 || !strings.HasPrefix(res.Warnings[0], wantWarning) {
		t.Errorf("warnings = %q, want one starting %q", res.Warnings, wantWarning)
	}
	fsckStrict(t, repo)
}

// TestCommitTreeSubmoduleWarnings: what `git add -A` silently leaves
// out of a submodule's directory, and a submodule removed while
// .gitmodules still lists it, are reported.
func TestCommitTreeSubmoduleWarnings(t *testing.T) {
	repo, _ := newRepo(t, map[string]file{
		"main.go":     {content: "m\n"},
		".gitmodules": {content: "[submodule \"gone\"]\n\tpath = gone\n\turl = https://example.com/gone.git\n"},
	})
	for _, p := range []string{"gone", "filled", "initialised", "empty"} {
		gitRun(t, repo, "update-index", "--add", "--cacheinfo", "160000,"+strings.Repeat("ab", 20)+","+p)
	}
	gitRun(t, repo, "commit", "-q", "-m", "submodules")
	base := mustHash(gitRun(t, repo, "rev-parse", "HEAD"))
	checkout := filepath.Join(t.TempDir(), "checkout")
	gitRun(t, repo, "clone", "-q", "--no-local", repo, checkout)
	remove(t, checkout, "gone")
	writeFiles(t, checkout, map[string]file{"filled/a.go": {content: "a\n"}, "filled/b/c.go": {content: "c\n"}, "initialised/x": {content: "x\n"}})
	initRepo(t, filepath.Join(checkout, "initialised"))

	res, err := CommitTree(context.Background(), repo, base, bytes.NewReader(tarDir(t, checkout)), CommitOptions{Branch: "runner/submodules"})
	if err != nil {
		t.Fatal(err)
	}
	if got := changesText(res.Changes); got != "D\tgone" {
		t.Errorf("changes:\n%s\nwant the deletion of gone only", got)
	}
	want := []string{
		`files inside 2 submodules ("filled", "initialised") are not committed: a submodule's content belongs to its own repository, and git add -A leaves it out too`,
		`submodule "initialised": the workspace has a .git inside, which runner never reads; the gitlink keeps the base commit, so a commit checked out or made inside is not recorded`,
		`submodule "gone" removed, but .gitmodules still describes it (the default policy protects .gitmodules: edit it yourself)`,
	}
	if !slices.Equal(res.Warnings, want) {
		t.Errorf("warnings:\n%s\nwant:\n%s", strings.Join(res.Warnings, "\n"), strings.Join(want, "\n"))
	}
}

// TestCommitTreeSubmoduleDeletionIsNotDropped: deleting a submodule's
// directory, or putting a file in its place, is a change, recorded as git
// records it; on main it was dropped and the task reported no change.
func TestCommitTreeSubmoduleDeletionIsNotDropped(t *testing.T) {
	for _, tc := range []struct {
		name   string
		change []entry
		want   string
	}{
		{"deleted", nil, "D\tvendor/mod"},
		{"file", []entry{{name: "./vendor/mod", body: "now a file\n"}}, "T\tvendor/mod"},
		{"symlink", []entry{{name: "./vendor/mod", typeflag: '2', link: "../main.go"}}, "T\tvendor/mod"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			repo, _ := newRepo(t, map[string]file{"main.go": {content: "m\n"}})
			gitRun(t, repo, "update-index", "--add", "--cacheinfo", "160000,"+strings.Repeat("cd", 20)+",vendor/mod")
			gitRun(t, repo, "commit", "-q", "-m", "submodule")
			base := mustHash(gitRun(t, repo, "rev-parse", "HEAD"))
			entries := append([]entry{{name: "./main.go", body: "m\n"}, {name: "./vendor/", typeflag: '5', mode: 0o755}}, tc.change...)
			res, err := CommitTree(context.Background(), repo, base, bytes.NewReader(tarOf(t, entries...)), CommitOptions{Branch: "runner/" + tc.name})
			if err != nil {
				t.Fatal(err)
			}
			if res.NoChanges {
				t.Fatal("no changes recorded")
			}
			if got := gitRun(t, repo, "diff", "--name-status", base.String(), res.Hash.String()); got != tc.want {
				t.Errorf("git diff: %q, want %q", got, tc.want)
			}
			fsckStrict(t, repo)
		})
	}
}

// TestCommitTreeWarningsQuoteHostileNames: the warnings reach a terminal;
// names and attribute values the agent chose are quoted, never raw.
func TestCommitTreeWarningsQuoteHostileNames(t *testing.T) {
	repo, base := newRepo(t, map[string]file{"a.txt": {content: "a\n"}})
	evil := "x\x1b]0;owned\x07\n\x1b[2J"
	snap := tarOf(t,
		entry{name: "./a.txt", body: "a\n"},
		entry{name: "./.gitattributes", body: "*.y filter=\x1b[31mred ident\n"},
		entry{name: "./" + evil + ".y", body: "y\n"},
		entry{name: "./" + evil + "/.git/HEAD", body: "ref: refs/heads/main\n"},
		entry{name: "./" + evil + "/f", body: "f\n"},
	)
	res, err := CommitTree(context.Background(), repo, base, bytes.NewReader(snap), CommitOptions{Branch: "runner/hostile-names"})
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Warnings) != 3 {
		t.Errorf("warnings = %q, want the nested repository and two attributes", res.Warnings)
	}
	for _, w := range res.Warnings {
		if strings.ContainsFunc(w, func(r rune) bool { return r < 0x20 || r == 0x7f }) {
			t.Errorf("warning carries a control character: %q", w)
		}
	}
}
