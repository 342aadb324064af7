package bench

import (
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

// The fixture is what the benchmarks say it is: n committed files of 200 B
// to 4 KB, a clean worktree, every object packed, and the same tree on
// every build.
func TestFixtureRepo(t *testing.T) {
	const n = 120
	var trees []string
	for range 2 {
		dir := t.TempDir()
		if err := buildRepo(dir, n); err != nil {
			t.Fatal(err)
		}
		files := strings.Fields(mustGit(t, dir, "ls-files"))
		if len(files) != n {
			t.Errorf("git ls-files: got %d files, want %d", len(files), n)
		}
		if got, want := files[n-1], fixturePath(n-1); got != want {
			t.Errorf("last file: got %s, want %s", got, want)
		}
		for _, f := range files {
			info, err := os.Stat(filepath.Join(dir, f))
			if err != nil {
				t.Fatal(err)
			}
			if info.Size() < 200 || info.Size() > 4200 {
				t.Errorf("%s: got %d bytes, want 200 to 4200", f, info.Size())
			}
		}
		if got := mustGit(t, dir, "status", "--porcelain"); got != "" {
			t.Errorf("git status: got %q, want a clean worktree", got)
		}
		if got := countField(t, mustGit(t, dir, "count-objects", "-v"), "count"); got != 0 {
			t.Errorf("loose objects: got %d, want 0 (packed)", got)
		}
		trees = append(trees, mustGit(t, dir, "rev-parse", "HEAD^{tree}"))
	}
	if trees[0] != trees[1] {
		t.Errorf("two builds gave trees %s and %s, want the same", trees[0], trees[1])
	}
}

func countField(t *testing.T, out, key string) int {
	t.Helper()
	for line := range strings.SplitSeq(out, "\n") {
		if v, ok := strings.CutPrefix(line, key+": "); ok {
			n, err := strconv.Atoi(v)
			if err != nil {
				t.Fatal(err)
			}
			return n
		}
	}
	t.Fatalf("no %q in %q", key, out)
	return 0
}
