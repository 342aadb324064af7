package batch

import (
	"context"
	"slices"
	"strings"
	"testing"

	"github.com/runner-dev/runner/internal/dockertest"
	"github.com/runner-dev/runner/internal/fakellm"
	"github.com/runner-dev/runner/tasks"
)

// What the check writes is not the agent's work: a check that fails, then
// passes, and each time writes a report, a bytecode cache and a line into
// a tracked file, leaves none of it on the branch (the exclude list is off
// here, so only setting the workspace aside can keep the cache out), and
// the agent, going on after the failed check, finds the workspace as it
// left it.
func TestCheckByProductsStayOffTheBranch(t *testing.T) {
	repo := fixtureRepo(t)
	store, err := tasks.OpenStore(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	defer store.Close()
	srv := fakellm.New(t,
		fakellm.ToolCall("write_file", `{"path":"app.py","content":"print('hi')\n"}`),
		fakellm.ToolCall("complete", `{"summary":"first try"}`),
		fakellm.ToolCall("run_command", `{"command":"ls -A > seen-after-check.txt; cat README.md >> seen-after-check.txt"}`),
		fakellm.ToolCall("write_file", `{"path":"fixed.txt","content":"fixed\n"}`),
		fakellm.ToolCall("complete", `{"summary":"Fixed it."}`),
	)
	check := "echo report > check-report.txt; mkdir -p __pycache__; echo pyc > __pycache__/app.cpython-312.pyc; " +
		"echo tampered >> README.md; rm app.py; test -f fixed.txt"
	queue := []tasks.Task{{
		ID: "byproducts", Repo: repo, Prompt: "Fix it.", Check: check, CheckRetries: 1, Exclude: []string{},
		Image: dockertest.Busybox(t), Model: "gpt-4o-mini", BudgetUSD: 1,
	}}
	sum, err := Run(context.Background(), queue, Options{RunID: dockertest.RunID}, deps(t, store, srv))
	if err != nil {
		t.Fatal(err)
	}
	r := sum.Results[0]
	if r.Status != tasks.StatusSucceeded || r.Commit == "" {
		t.Fatalf("result = %+v", r)
	}
	files := strings.Fields(git(t, repo, "ls-tree", "-r", "--name-only", "agent/byproducts"))
	if want := []string{"README.md", "app.py", "fixed.txt", "seen-after-check.txt"}; !slices.Equal(files, want) {
		t.Errorf("files on the branch = %q, want %q", files, want)
	}
	if got := git(t, repo, "show", "agent/byproducts:README.md"); got != "# Helo" {
		t.Errorf("README.md on the branch = %q, want it as the agent left it", got)
	}
	if got := git(t, repo, "show", "agent/byproducts:seen-after-check.txt"); got != ".git\nREADME.md\napp.py\nseen-after-check.txt\n# Helo" {
		t.Errorf("after the failed check the agent saw:\n%s\nwant its own workspace", got)
	}
	if len(r.Warnings) != 0 || len(r.Excluded) != 0 {
		t.Errorf("warnings %q, excluded %q; want none", r.Warnings, r.Excluded)
	}
}
