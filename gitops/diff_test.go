package gitops

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

// numstat is git's account of a commit: per path, lines added and
// deleted ("-" for a binary file), read from `git diff --numstat -z`.
func numstat(t *testing.T, repo, renames, from, to string) map[string][2]string {
	t.Helper()
	out := gitRun(t, repo, "diff", "--numstat", "-z", renames, from, to)
	got := map[string][2]string{}
	fields := strings.Split(out, "\x00")
	for i := 0; i < len(fields); i++ {
		if fields[i] == "" {
			continue
		}
		parts := strings.SplitN(fields[i], "\t", 3)
		path := parts[2]
		if path == "" { // a rename: the old and new names follow
			path = fields[i+2]
			i += 2
		}
		got[path] = [2]string{parts[0], parts[1]}
	}
	return got
}

// The diff of a commit is git's: the same files with the same counts, and
// for a plain text change the same hunks as `git diff` shows; a name made
// to pass for HTML or for a hunk header is kept as it is; a large file is
// listed, not diffed.
func TestDiffMatchesGit(t *testing.T) {
	var long, longChanged strings.Builder
	for i := range 40 {
		fmt.Fprintf(&long, "line %d\n", i)
		if i == 2 || i == 30 {
			fmt.Fprintf(&longChanged, "line %d changed\n", i)
		} else {
			fmt.Fprintf(&longChanged, "line %d\n", i)
		}
	}
	big := strings.Repeat("0123456789abcdef\n", 20000) // 340 KB
	hostile := `<img src=x onerror=alert(1)>.txt`
	repo, base := newRepo(t, map[string]file{
		"long.txt":       {content: long.String()},
		"gone.txt":       {content: "bye\n"},
		"moved/from.txt": {content: strings.Repeat("same content\n", 20)},
		"bin.dat":        {content: "a\x00b"},
		"run.sh":         {content: "echo hi\n"},
		"big.txt":        {content: big},
		"tail.txt":       {content: "no newline"},
	})
	writeFiles(t, repo, map[string]file{
		"long.txt":     {content: longChanged.String()},
		"moved/to.txt": {content: strings.Repeat("same content\n", 20)},
		"bin.dat":      {content: "a\x00c"},
		"run.sh":       {content: "echo hi\n", mode: 0o755},
		"big.txt":      {content: big + "more\n"},
		"tail.txt":     {content: "no newline, still"},
		"new/link":     {link: "../long.txt"},
		hostile:        {content: "<svg onload=alert(2)>\n"},
	})
	remove(t, repo, "gone.txt", "moved/from.txt")
	gitRun(t, repo, "add", "-A")
	gitRun(t, repo, "commit", "-q", "-m", "change")
	head := gitRun(t, repo, "rev-parse", "HEAD")

	d, err := Diff(context.Background(), repo, head, DiffLimits{})
	if err != nil {
		t.Fatal(err)
	}
	if d.Commit != head || d.Parent != base.String() {
		t.Errorf("diff of %s against %s, want %s against %s", d.Commit, d.Parent, head, base)
	}
	want := numstat(t, repo, "--find-renames", base.String(), head)
	files := map[string]FileDiff{}
	for _, f := range d.Files {
		files[f.Path] = f
	}
	if len(files) != len(want) {
		t.Errorf("%d files in the diff, git lists %d: %v", len(files), len(want), want)
	}
	for path, counts := range want {
		f, ok := files[path]
		switch {
		case !ok:
			t.Errorf("%q: missing from the diff", path)
		case path == "big.txt":
			if f.Counted || len(f.Lines) != 0 || !strings.Contains(f.Note, "not shown") {
				t.Errorf("big.txt was diffed: %+v", f.Note)
			}
		case counts[0] == "-":
			if !f.Binary {
				t.Errorf("%q: git sees a binary file, the diff does not", path)
			}
		case !f.Counted || strconv.Itoa(f.Added) != counts[0] || strconv.Itoa(f.Deleted) != counts[1]:
			t.Errorf("%q: +%d -%d (counted %v), git says +%s -%s", path, f.Added, f.Deleted, f.Counted, counts[0], counts[1])
		}
	}
	if f := files["moved/to.txt"]; f.Change != "renamed" || f.OldPath != "moved/from.txt" {
		t.Errorf("the rename is seen as %s from %q", f.Change, f.OldPath)
	}
	if f := files["run.sh"]; f.OldMode != "0100644" || f.NewMode != "0100755" {
		t.Errorf("run.sh: mode %s → %s", f.OldMode, f.NewMode)
	}
	for _, path := range []string{"long.txt", "tail.txt", hostile} {
		gitBody := gitRun(t, repo, "diff", base.String(), head, "--", path)
		gitBody = gitBody[strings.Index(gitBody, "\n@@ ")+1:]
		if got := strings.Join(files[path].Lines, "\n"); got != gitBody {
			t.Errorf("%q: the diff shows\n%s\ngit diff shows\n%s", path, got, gitBody)
		}
	}
}

// A name git accepts and go-git's rename detection refuses (a line break,
// here with a forged hunk header after it) is diffed all the same, with
// renames listed as a deletion and an addition, as git --no-renames does.
func TestDiffOfNameWithLineBreak(t *testing.T) {
	hunkName := "x\n@@ -1 +1 @@\n+forged"
	repo, base := newRepo(t, map[string]file{"gone.txt": {content: "bye\n"}, "from.txt": {content: strings.Repeat("same\n", 20)}})
	writeFiles(t, repo, map[string]file{hunkName: {content: "content\n"}, "to.txt": {content: strings.Repeat("same\n", 20)}})
	remove(t, repo, "gone.txt", "from.txt")
	gitRun(t, repo, "add", "-A")
	gitRun(t, repo, "commit", "-q", "-m", "names")
	head := gitRun(t, repo, "rev-parse", "HEAD")
	d, err := Diff(context.Background(), repo, head, DiffLimits{})
	if err != nil {
		t.Fatal(err)
	}
	want := numstat(t, repo, "--no-renames", base.String(), head)
	if len(d.Files) != len(want) {
		t.Fatalf("%d files, git lists %d: %v", len(d.Files), len(want), want)
	}
	for _, f := range d.Files {
		if counts, ok := want[f.Path]; !ok || strconv.Itoa(f.Added) != counts[0] || strconv.Itoa(f.Deleted) != counts[1] {
			t.Errorf("%q: +%d -%d, git says %v", f.Path, f.Added, f.Deleted, counts)
		}
		if f.Path == hunkName && (len(f.Lines) != 2 || f.Lines[0] != "@@ -0,0 +1 @@" || f.Lines[1] != "+content") {
			t.Errorf("the file whose name holds a hunk header: %q", f.Lines)
		}
	}
}

// Limits cut the lines shown, per file and in all, and say so; the counts
// stay whole.
func TestDiffLimits(t *testing.T) {
	repo, base := newRepo(t, map[string]file{"a.txt": {content: "a\n"}})
	writeFiles(t, repo, map[string]file{
		"a.txt": {content: strings.Repeat("x\n", 50)},
		"b.txt": {content: strings.Repeat("y\n", 50)},
	})
	gitRun(t, repo, "add", "-A")
	gitRun(t, repo, "commit", "-q", "-m", "more")
	head := gitRun(t, repo, "rev-parse", "HEAD")
	d, err := Diff(context.Background(), repo, head, DiffLimits{MaxFileLines: 20, MaxLines: 30})
	if err != nil {
		t.Fatal(err)
	}
	a, b := d.Files[0], d.Files[1]
	if len(a.Lines) != 20 || a.Omitted != 32 || a.Added != 50 || a.Deleted != 1 || !strings.Contains(a.Note, "at most 20 lines") {
		t.Errorf("a.txt: %d lines shown, %d omitted, +%d -%d, note %q", len(a.Lines), a.Omitted, a.Added, a.Deleted, a.Note)
	}
	if len(b.Lines) != 10 || b.Omitted != 41 || b.Added != 50 || !strings.Contains(b.Note, "at most") {
		t.Errorf("b.txt: %d lines shown, %d omitted, +%d, note %q", len(b.Lines), b.Omitted, b.Added, b.Note)
	}
	if d.Added != 100 || d.Deleted != 1 {
		t.Errorf("totals +%d -%d, want +100 -1", d.Added, d.Deleted)
	}
	if _, err := Diff(context.Background(), repo, base.String()[:10], DiffLimits{}); err == nil {
		t.Errorf("an abbreviated hash was accepted")
	}
	if _, err := Diff(context.Background(), filepath.Join(repo, "nowhere"), head, DiffLimits{}); err == nil {
		t.Errorf("a missing repository was accepted")
	}
	os.RemoveAll(filepath.Join(repo, ".git", "objects"))
	if _, err := Diff(context.Background(), repo, head, DiffLimits{}); err == nil || !strings.Contains(err.Error(), head) {
		t.Errorf("a missing commit: %v", err)
	}
}
