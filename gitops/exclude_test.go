package gitops

import (
	"bytes"
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"
)

// pycacheExclude is a default-like exclude list for the tests.
var pycacheExclude = []string{"__pycache__/", "*.py[cod]", ".pytest_cache/", ".mypy_cache/", ".DS_Store"}

// gitWith runs git in dir with extra -c settings, bounded by the test.
func gitWith(t *testing.T, dir string, config []string, args ...string) string {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), time.Minute)
	defer cancel()
	var full []string
	for _, c := range config {
		full = append(full, "-c", c)
	}
	cmd := exec.CommandContext(ctx, "git", append(full, args...)...)
	cmd.Dir = dir
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		t.Fatalf("git %s: %v: %s", strings.Join(args, " "), err, stderr.String())
	}
	return strings.TrimRight(stdout.String(), "\n")
}

// TestCommitTreeExcludeMatchesCoreExcludesFile compares CommitTree with
// Exclude against `git add -A` run with core.excludesFile holding the same
// patterns: tracked files matching a pattern stay (and their changes are
// committed), a repository's "!pattern" re-includes, info/exclude and
// .gitignore files take precedence. The excluded list is checked against
// `git ls-files --others --exclude-standard` with and without the file.
func TestCommitTreeExcludeMatchesCoreExcludesFile(t *testing.T) {
	repo, base := newRepo(t, map[string]file{
		"app.py":                              {content: "print(1)\n"},
		"pkg/__pycache__/tracked.cpython.pyc": {content: "tracked bytecode\n"},
		"vendor/lib.pyc":                      {content: "v1\n"},
		".gitignore":                          {content: "!important.pyc\n*.log\n"},
		"docs/.gitignore":                     {content: "!.DS_Store\n"},
	})
	checkout := filepath.Join(t.TempDir(), "checkout")
	gitRun(t, repo, "clone", "-q", "--no-local", repo, checkout)
	for _, d := range []string{repo, checkout} {
		if err := os.WriteFile(filepath.Join(d, ".git", "info", "exclude"), []byte("!.mypy_cache/\n"), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	writeFiles(t, checkout, map[string]file{
		"app.py":                              {content: "print(2)\n"},
		"new.py":                              {content: "x = 1\n"},
		"__pycache__/app.cpython-312.pyc":     {content: "bytecode\n"},
		"__pycache__/new.cpython-312.pyc":     {content: "bytecode 2\n"},
		"pkg/__pycache__/tracked.cpython.pyc": {content: "rebuilt bytecode\n"},
		"pkg/__pycache__/other.cpython.pyc":   {content: "other\n"},
		"vendor/lib.pyc":                      {content: "v2\n"},
		"vendor/extra.pyc":                    {content: "extra\n"},
		"important.pyc":                       {content: "re-included\n"},
		"deep/er/important.pyc":               {content: "re-included too\n"},
		".pytest_cache/v/cache/nodeids":       {content: "[]\n"},
		".pytest_cache/README.md":             {content: "cache\n"},
		".mypy_cache/3.12/app.json":           {content: "{}\n"},
		".DS_Store":                           {content: "mac\n"},
		"docs/.DS_Store":                      {content: "mac, kept by docs/.gitignore\n"},
		"run.log":                             {content: "ignored by the repository\n"},
	})
	excludesFile := filepath.Join(t.TempDir(), "excludes")
	if err := os.WriteFile(excludesFile, []byte(strings.Join(pycacheExclude, "\n")+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	withList := []string{"core.excludesFile=" + excludesFile}
	withoutList := []string{"core.excludesFile=" + os.DevNull}
	snap := tarDir(t, checkout)
	leftOut := setDifference(
		strings.Split(gitWith(t, checkout, withoutList, "ls-files", "--others", "--exclude-standard"), "\n"),
		strings.Split(gitWith(t, checkout, withList, "ls-files", "--others", "--exclude-standard"), "\n"))
	gitWith(t, checkout, withList, "add", "-A")
	want := gitWith(t, checkout, nil, "write-tree")

	res, err := CommitTree(t.Context(), repo, base, bytes.NewReader(snap), CommitOptions{Branch: "runner/exclude", Exclude: pycacheExclude})
	if err != nil {
		t.Fatalf("CommitTree: %v", err)
	}
	if got := gitRun(t, repo, "rev-parse", "runner/exclude^{tree}"); got != want {
		t.Errorf("branch tree = %s, want the tree of git add -A with core.excludesFile %s\ngot:\n%s\nwant:\n%s", got, want,
			gitRun(t, repo, "ls-tree", "-r", "--name-only", got), gitRun(t, checkout, "ls-tree", "-r", "--name-only", want))
	}
	// The fixture must exercise what it claims to.
	tree := gitRun(t, repo, "ls-tree", "-r", "--name-only", "runner/exclude")
	for _, p := range []string{"pkg/__pycache__/tracked.cpython.pyc", "vendor/lib.pyc", "important.pyc", "deep/er/important.pyc", "docs/.DS_Store", ".mypy_cache/3.12/app.json", "new.py"} {
		if !slices.Contains(strings.Split(tree, "\n"), p) {
			t.Errorf("%s missing from the branch:\n%s", p, tree)
		}
	}

	if res.ExcludedFiles != len(leftOut) {
		t.Errorf("ExcludedFiles = %d, want %d (%v)", res.ExcludedFiles, len(leftOut), leftOut)
	}
	for _, p := range leftOut {
		if !slices.ContainsFunc(res.Excluded, func(e string) bool { return e == p || strings.HasSuffix(e, "/") && strings.HasPrefix(p, e) }) {
			t.Errorf("%s left out but not listed in %q", p, res.Excluded)
		}
	}
	wantList := []string{".DS_Store", ".pytest_cache/", "__pycache__/", "pkg/__pycache__/other.cpython.pyc", "vendor/extra.pyc"}
	if !slices.Equal(res.Excluded, wantList) {
		t.Errorf("Excluded = %q, want %q", res.Excluded, wantList)
	}
	fsckStrict(t, repo)
}

func setDifference(a, b []string) []string {
	var out []string
	for _, s := range a {
		if s != "" && !slices.Contains(b, s) {
			out = append(out, s)
		}
	}
	return out
}

// TestCommitTreeExcludeNone checks that without Exclude nothing is left out
// beyond the repository's rules, and that a pattern cannot smuggle in a
// second line.
func TestCommitTreeExcludeNone(t *testing.T) {
	repo, base := newRepo(t, map[string]file{"a.py": {content: "a\n"}})
	snap := tarOf(t, entry{name: "./", typeflag: '5', mode: 0o755}, entry{name: "./a.py", body: "a\n"},
		entry{name: "./__pycache__/", typeflag: '5', mode: 0o755}, entry{name: "./__pycache__/a.pyc", body: "pyc\n"})
	res, err := CommitTree(t.Context(), repo, base, bytes.NewReader(snap), CommitOptions{Branch: "none"})
	if err != nil {
		t.Fatal(err)
	}
	if got := gitRun(t, repo, "ls-tree", "-r", "--name-only", "none"); got != "__pycache__/a.pyc\na.py" {
		t.Errorf("tree without Exclude:\n%s", got)
	}
	if len(res.Excluded) != 0 || res.ExcludedFiles != 0 {
		t.Errorf("Excluded = %q, %d; want none", res.Excluded, res.ExcludedFiles)
	}
	_, err = CommitTree(t.Context(), repo, base, bytes.NewReader(snap), CommitOptions{Branch: "two-lines", Exclude: []string{"x\n!a.py"}})
	if err == nil || !strings.Contains(err.Error(), "one line") {
		t.Errorf("a pattern with a newline: err = %v, want a refusal", err)
	}
}
