package gitops

import (
	"archive/tar"
	"bytes"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// checkoutWith clones repo and makes its worktree hold exactly entries
// (the base's files included), hard links as hard links: the state in
// which `git add -A` is the reference.
func checkoutWith(t *testing.T, repo string, entries []entry) string {
	t.Helper()
	work := filepath.Join(t.TempDir(), "work")
	gitBounded(t, t.TempDir(), "clone", "-q", repo, work)
	for _, e := range entries {
		name := strings.TrimSuffix(strings.TrimPrefix(e.name, "./"), "/")
		if name == "" || name == "." {
			continue
		}
		full := filepath.Join(work, filepath.FromSlash(name))
		if err := os.MkdirAll(filepath.Dir(full), 0o755); err != nil {
			t.Fatal(err)
		}
		var err error
		switch e.typeflag {
		case tar.TypeDir:
			err = os.MkdirAll(full, 0o755)
		case tar.TypeLink:
			err = os.Link(filepath.Join(work, filepath.FromSlash(strings.TrimPrefix(e.link, "./"))), full)
		case tar.TypeSymlink:
			err = os.Symlink(e.link, full)
		default:
			err = os.WriteFile(full, []byte(e.body), 0o644)
		}
		if err != nil {
			t.Fatal(err)
		}
	}
	return work
}

// Output git add -A leaves out (a build directory, node_modules, *.log)
// never fails the commit: a hard link, files over the size cap and more
// entries than the cap inside ignored paths are dropped, and the agent's
// real edits are committed exactly as git commits them, a tracked file
// inside an ignored directory included.
func TestCommitTreeDropsIgnoredOutput(t *testing.T) {
	const maxFile, maxEntries = 64, 20
	big := strings.Repeat("b", maxFile+1)
	baseFiles := map[string]file{
		".gitignore":  {content: "target/\nnode_modules/\ndist/\n*.log\n"},
		"src/main.rs": {content: "fn main() {}\n"},
		"dist/app.js": {content: "v1\n"}, // tracked, though ignored
	}
	repo, base := newRepo(t, baseFiles)
	entries := []entry{
		{name: "./", typeflag: tar.TypeDir},
		{name: "./.gitignore", body: baseFiles[".gitignore"].content},
		{name: "./build.log", typeflag: tar.TypeLink, link: "./.gitignore"},
		{name: "./huge.log", body: big},
		{name: "./dist/", typeflag: tar.TypeDir},
		{name: "./dist/app.js", body: "v2\n"},
		{name: "./dist/new.js", body: big},
		{name: "./node_modules/", typeflag: tar.TypeDir},
	}
	for i := range 3 * maxEntries {
		entries = append(entries, entry{name: fmt.Sprintf("./node_modules/m%02d.js", i), body: "m"})
	}
	entries = append(entries,
		entry{name: "./src/", typeflag: tar.TypeDir},
		entry{name: "./src/main.rs", body: "fn main() { println!(\"edited\"); }\n"},
		entry{name: "./target/", typeflag: tar.TypeDir},
		entry{name: "./target/debug/", typeflag: tar.TypeDir},
		entry{name: "./target/debug/app", body: big},
		entry{name: "./target/debug/app.d", typeflag: tar.TypeLink, link: "./target/debug/app"},
	)
	work := checkoutWith(t, repo, entries)
	ignoredByGit := strings.Split(gitBounded(t, work, "ls-files", "-o", "-i", "--exclude-standard"), "\n")
	for _, p := range []string{"build.log", "huge.log", "dist/new.js", "node_modules/m00.js", "target/debug/app", "target/debug/app.d"} {
		if !slices.Contains(ignoredByGit, p) {
			t.Fatalf("git does not see %s as ignored (%q): the fixture is wrong", p, ignoredByGit)
		}
	}
	gitBounded(t, work, "add", "-A")
	wantTree := gitBounded(t, work, "write-tree")

	res, err := CommitTree(t.Context(), repo, base, bytes.NewReader(tarOf(t, entries...)),
		CommitOptions{Branch: "ignored-output", MaxFileSize: maxFile, MaxEntries: maxEntries})
	if err != nil {
		t.Fatalf("CommitTree: %v; want the ignored output dropped and the edits committed", err)
	}
	if res.Tree.String() != wantTree {
		t.Errorf("tree %s, git add -A writes %s:\n%s", res.Tree, wantTree, gitBounded(t, repo, "diff-tree", "-r", "--name-status", wantTree, res.Tree.String()))
	}
	want := []FileChange{{Path: "dist/app.js", Kind: Modified}, {Path: "src/main.rs", Kind: Modified}}
	if !slices.Equal(res.Changes, want) {
		t.Errorf("changes %v, want %v", res.Changes, want)
	}
}

// The host's protections still hold inside ignored paths, and what git
// would commit is still refused when over a bound.
func TestCommitTreeIgnoredPathsKeepHostChecks(t *testing.T) {
	const maxFile, maxEntries = 64, 4
	big := strings.Repeat("b", maxFile+1)
	gitignore := entry{name: "./.gitignore", body: "node_modules/\ndist/\n*.log\n"}
	tests := []struct {
		name    string
		entries []entry
		wantWhy string
	}{
		{"entry below a symlink in an ignored directory", []entry{gitignore,
			{name: "./node_modules/.bin", typeflag: tar.TypeSymlink, link: "/etc"},
			{name: "./node_modules/.bin/passwd", body: "x"}}, `inside a file or symlink "node_modules/.bin"`},
		{"ignored entry below a kept file", []entry{gitignore,
			{name: "./x.log", body: "a file"},
			{name: "./x.log/y", body: "x"}}, `inside file "x.log"`},
		{"kept file holding ignored entries", []entry{gitignore,
			{name: "./node_modules/a/b", body: "x"},
			{name: "./node_modules/a", body: "a file"}}, "a file or symlink holding other entries"},
		{"absolute path in an ignored directory", []entry{gitignore,
			{name: "/node_modules/x", body: "x"}}, "absolute path"},
		{"parent component in an ignored directory", []entry{gitignore,
			{name: "./node_modules/../../x", body: "x"}}, "parent directory component"},
		{"hard link not ignored", []entry{gitignore,
			{name: "./src.txt", typeflag: tar.TypeLink, link: "./.gitignore"}}, "hard link"},
		{"big file not ignored", []entry{gitignore,
			{name: "./big.txt", body: big}}, "exceeds the 64-byte limit"},
		{"big tracked file in an ignored directory", []entry{gitignore,
			{name: "./dist/app.js", body: big}}, "exceeds the 64-byte limit"},
		{"too many ignored entries", append([]entry{gitignore},
			manyEntries("./node_modules/f%02d", 10*maxEntries+1)...), "more than 40 entries in ignored directories"},
		{"too many entries not ignored", append([]entry{gitignore},
			manyEntries("./src/f%02d", maxEntries)...), "more than 4 entries"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			repo, base := newRepo(t, map[string]file{"dist/app.js": {content: "v1\n"}})
			_, err := CommitTree(t.Context(), repo, base, bytes.NewReader(tarOf(t, tt.entries...)),
				CommitOptions{Branch: "checked", MaxFileSize: maxFile, MaxEntries: maxEntries})
			if !errors.Is(err, ErrUnsafeSnapshot) || !strings.Contains(err.Error(), tt.wantWhy) {
				t.Fatalf("err = %v, want the snapshot refused: %s", err, tt.wantWhy)
			}
		})
	}
}

func manyEntries(format string, n int) []entry {
	out := make([]entry, n)
	for i := range out {
		out[i] = entry{name: fmt.Sprintf(format, i), body: "x"}
	}
	return out
}

// The stream's order does not change the verdict: entries read before the
// .gitignore that ignores them are dropped once it is known, as git
// would; a directory dropped as excluded and then re-included by a
// .gitignore read later refuses the snapshot rather than lose its files.
func TestCommitTreeIgnoreRulesReadAfterTheirPaths(t *testing.T) {
	const maxFile = 64
	big := strings.Repeat("b", maxFile+1)
	t.Run("ignored after", func(t *testing.T) {
		repo, base := newRepo(t, map[string]file{"a.txt": {content: "a\n"}})
		entries := []entry{
			{name: "./", typeflag: tar.TypeDir},
			{name: "./-out/", typeflag: tar.TypeDir},
			{name: "./-out/big", body: big},
			{name: "./-out/hl", typeflag: tar.TypeLink, link: "./-out/big"},
			{name: "./.gitignore", body: "-out/\n"},
			{name: "./a.txt", body: "edited\n"},
		}
		work := checkoutWith(t, repo, entries)
		gitBounded(t, work, "add", "-A")
		wantTree := gitBounded(t, work, "write-tree")
		res, err := CommitTree(t.Context(), repo, base, bytes.NewReader(tarOf(t, entries...)), CommitOptions{Branch: "after", MaxFileSize: maxFile})
		if err != nil {
			t.Fatal(err)
		}
		if res.Tree.String() != wantTree {
			t.Errorf("tree %s, git add -A writes %s", res.Tree, wantTree)
		}
	})
	t.Run("re-included after", func(t *testing.T) {
		repo, base := newRepo(t, map[string]file{"a.txt": {content: "a\n"}})
		if err := os.WriteFile(filepath.Join(repo, ".git", "info", "exclude"), []byte("cache/\n"), 0o644); err != nil {
			t.Fatal(err)
		}
		entries := []entry{
			{name: "./cache/x", body: "x"},
			{name: "./.gitignore", body: "!cache/\n"},
		}
		_, err := CommitTree(t.Context(), repo, base, bytes.NewReader(tarOf(t, entries...)), CommitOptions{Branch: "reincluded"})
		if !errors.Is(err, ErrUnsafeSnapshot) || !strings.Contains(err.Error(), `"cache/"`) || !strings.Contains(err.Error(), "re-included") {
			t.Fatalf("err = %v, want the snapshot refused, naming cache/", err)
		}
	})
}
