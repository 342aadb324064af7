package main

import (
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/runner-dev/runner/internal/cli"
	"github.com/runner-dev/runner/internal/dockertest"
	"github.com/runner-dev/runner/internal/fakellm"
)

// `runner exec` leaves build and cache artifacts the repository does not
// ignore off the branch, keeps a tracked one, records what it left out in
// results.jsonl, and `runner show` lists it.
func TestExecLeavesCachesOffTheBranch(t *testing.T) {
	repo, _ := sourceRepo(t, map[string]string{"app.py": "print(1)\n", "vendor/tracked.pyc": "v1\n"})
	srv, scripts := modelServer(t, map[string][]fakellm.Turn{"caches": {
		fakellm.ToolCall("run_command", `{"command":"echo 'print(2)' > app.py && mkdir -p __pycache__ .pytest_cache/v && echo b > __pycache__/app.cpython-311.pyc && echo c > .pytest_cache/v/ids && echo m > .DS_Store && echo v2 > vendor/tracked.pyc"}`),
		complete("Changed the app."),
	}})
	out := filepath.Join(t.TempDir(), "out")
	res, _ := runRunner(t, srv, "exec", "--repo", repo, "--id", "caches", "--image", dockertest.Busybox(t), "--out", out,
		"Change the caches app.")
	if res.code != cli.ExitOK {
		t.Fatalf("runner exec: %s", res)
	}
	scripts.left(t)
	files := strings.Fields(gitCLI(t, repo, "ls-tree", "-r", "--name-only", "agent/caches"))
	if want := []string{"app.py", "vendor/tracked.pyc"}; !slices.Equal(files, want) {
		t.Errorf("files on the branch = %q, want %q", files, want)
	}
	if got := gitCLI(t, repo, "show", "agent/caches:vendor/tracked.pyc"); got != "v2" {
		t.Errorf("the tracked .pyc on the branch = %q, want its change", got)
	}
	rs := readResultLines(t, out)
	if len(rs) != 1 {
		t.Fatalf("results = %+v", rs)
	}
	if want := []string{".DS_Store", ".pytest_cache/", "__pycache__/"}; !slices.Equal(rs[0].Excluded, want) || rs[0].ExcludedFiles != 3 {
		t.Errorf("result excluded = %q (%d files), want %q (3 files)", rs[0].Excluded, rs[0].ExcludedFiles, want)
	}
	show := runMain(t, "show", out, "caches")
	if !strings.Contains(show.stdout, "left out of the commit by the exclude list (3 file(s)):\n  .DS_Store\n  .pytest_cache/\n  __pycache__/\n") {
		t.Errorf("runner show does not list what was left out:\n%s", show)
	}
}
