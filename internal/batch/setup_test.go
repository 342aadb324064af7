package batch

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/runner-dev/runner/internal/dockertest"
	"github.com/runner-dev/runner/internal/fakellm"
	"github.com/runner-dev/runner/tasks"
)

// setupRepo is a repository whose .gitignore ignores deps/.
func setupRepo(t *testing.T) string {
	t.Helper()
	dir := t.TempDir()
	git(t, dir, "init", "-q", "-b", "main")
	os.WriteFile(filepath.Join(dir, "README.md"), []byte("# Hello\n"), 0o644)
	os.WriteFile(filepath.Join(dir, ".gitignore"), []byte("deps/\n"), 0o644)
	git(t, dir, "add", "-A")
	git(t, dir, "commit", "-q", "-m", "first")
	return dir
}

// A task with setup: the setup's secret reaches the setup only; its output
// is in the trajectory, redacted; the agent finds what setup prepared,
// commits its own work and nothing of setup's ignored additions; a second
// task reuses the environment; the secret is nowhere in the out directory
// or the branch.
func TestSetupTaskSecretsAndCache(t *testing.T) {
	e := dockertest.Engine(t)
	repo := setupRepo(t)
	outDir := t.TempDir()
	store, err := tasks.OpenStore(outDir)
	if err != nil {
		t.Fatal(err)
	}
	defer store.Close()
	canary := "setup-canary-" + randomSuffix() + randomSuffix()
	srv := fakellm.New(t,
		fakellm.ToolCall("run_command", `{"command":"cat deps/tool /etc/warm; env; tr '\\0' '\\n' < /proc/1/environ; echo made > work.txt"}`),
		fakellm.ToolCall("complete", `{"summary":"done"}`),
		fakellm.ToolCall("run_command", `{"command":"cat deps/tool /etc/warm"}`),
		fakellm.ToolCall("complete", `{"summary":"done again"}`),
	)
	d := deps(t, store, srv)
	d.Environments = e
	d.Getenv = func(name string) string {
		if name == "TEST_SETUP_TOKEN" {
			return canary
		}
		return ""
	}
	setup := tasks.Setup{
		Commands: []string{`mkdir -p deps && echo tool-ready > deps/tool && echo warm > /etc/warm && echo "using token $SETUP_TOKEN"`},
		Network:  tasks.NetworkNone, Timeout: tasks.DefaultSetupTimeout,
		HostEnv: map[string]string{"SETUP_TOKEN": "TEST_SETUP_TOKEN"},
	}
	task := func(id string) tasks.Task {
		return tasks.Task{ID: id, Repo: repo, Prompt: "Work.", Image: dockertest.Busybox(t), Model: "gpt-4o-mini", BudgetUSD: 1, Setup: setup}
	}
	sum, err := Run(context.Background(), []tasks.Task{task("first"), task("second")}, Options{RunID: dockertest.RunID, EnvironmentCacheLimit: -1}, d)
	if err != nil {
		t.Fatal(err)
	}
	first, second := sum.Results[0], sum.Results[1]
	t.Cleanup(func() {
		if first.Setup != nil {
			e.RemoveEnvironment(context.Background(), first.Setup.Key)
		}
	})
	if first.Status != tasks.StatusSucceeded || first.Setup == nil || first.Setup.Cached || first.Setup.Key == "" {
		t.Fatalf("first task: %+v (setup %+v); want succeeded after a setup run", first, first.Setup)
	}
	if second.Status != tasks.StatusSucceeded || second.Setup == nil || !second.Setup.Cached || second.Setup.Key != first.Setup.Key {
		t.Fatalf("second task: %+v (setup %+v); want succeeded on the cached environment", second, second.Setup)
	}
	if got := git(t, repo, "ls-tree", "-r", "--name-only", "agent/first"); got != ".gitignore\nREADME.md\nwork.txt" {
		t.Errorf("files on the branch:\n%s\nwant the agent's work.txt and no deps/", got)
	}
	traj, err := os.ReadFile(filepath.Join(outDir, "trajectories", "first.1.jsonl"))
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{`"type":"setup"`, "using token", "tool-ready"} {
		if !strings.Contains(string(traj), want) {
			t.Errorf("the trajectory lacks %q", want)
		}
	}
	// The canary, anywhere: out directory, branch history.
	filepath.Walk(outDir, func(p string, info os.FileInfo, err error) error {
		if err == nil && info.Mode().IsRegular() {
			if b, _ := os.ReadFile(p); strings.Contains(string(b), canary) {
				t.Errorf("%s holds the setup's secret", p)
			}
		}
		return nil
	})
	if out := git(t, repo, "log", "-p", "--all"); strings.Contains(out, canary) {
		t.Errorf("the repository's history holds the setup's secret")
	}
}

// A failing setup ends the task as setup_failed with the tail of its
// output, before any model call.
func TestSetupFailureEndsTaskBeforeTheModel(t *testing.T) {
	repo := setupRepo(t)
	store, err := tasks.OpenStore(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	defer store.Close()
	srv := fakellm.New(t) // any call fails the test
	d := deps(t, store, srv)
	d.Environments = dockertest.Engine(t)
	task := tasks.Task{ID: "broken", Repo: repo, Prompt: "Work.", Image: dockertest.Busybox(t), Model: "gpt-4o-mini", BudgetUSD: 1,
		Setup: tasks.Setup{Commands: []string{"echo fetching; echo 'E: unable to locate package nope' >&2; exit 100"}, Network: tasks.NetworkNone, Timeout: tasks.DefaultSetupTimeout, NoCache: true}}
	sum, err := Run(context.Background(), []tasks.Task{task}, Options{RunID: dockertest.RunID}, d)
	if err != nil {
		t.Fatal(err)
	}
	r := sum.Results[0]
	if r.Status != tasks.StatusSetupFailed || !strings.Contains(r.Error, "exited with code 100") || !strings.Contains(r.Error, "unable to locate package nope") {
		t.Errorf("result: %s, %q; want setup_failed with the exit code and the output's tail", r.Status, r.Error)
	}
	if r.Calls != 0 || r.CostUSD != 0 || len(srv.Requests()) != 0 {
		t.Errorf("calls %d, cost %g, requests %d: want no model call", r.Calls, r.CostUSD, len(srv.Requests()))
	}
	if r.Branch != "" || r.Commit != "" {
		t.Errorf("branch %q commit %q: want nothing committed", r.Branch, r.Commit)
	}
}
