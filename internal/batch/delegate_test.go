package batch

import (
	"context"
	"os"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/runner-dev/runner/internal/dockertest"
	"github.com/runner-dev/runner/internal/fakellm"
	"github.com/runner-dev/runner/internal/policy"
	"github.com/runner-dev/runner/tasks"
)

// runContainers lists the containers of a run by its id.
func runContainers(t *testing.T, run string) []string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	list, err := dockertest.Engine(t).List(ctx)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, l := range list {
		if l.Run == run {
			names = append(names, l.Name)
		}
	}
	return names
}

// A parent hands one subtask to a sub-agent in its own sandbox and one to
// an isolated sub-agent, whose sandbox starts from the parent's workspace
// as it is then (with the first sub-agent's file and an executable mode),
// and applies the isolated one's patch: the branch holds both changes,
// and no sandbox is left.
func TestDelegateTwoSubtasksOneIsolated(t *testing.T) {
	repo := fixtureRepo(t)
	store, err := tasks.OpenStore(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	defer store.Close()
	srv := fakellm.New(t,
		fakellm.ToolCall("delegate", `{"task":"Write a.txt."}`),
		fakellm.ToolCall("run_command", `{"command":"echo from one > a.txt && printf '#!/bin/sh\\n' > run.sh && chmod +x run.sh && ln -s a.txt link"}`),
		fakellm.ToolCall("complete", `{"summary":"wrote a.txt"}`),
		fakellm.ToolCall("delegate", `{"task":"Fix README.md.","isolated":true}`),
		fakellm.ToolCall("run_command", `{"command":"{ cat a.txt; ls -l run.sh | cut -c1-10; readlink link; ls -A; } > seen.txt && rm a.txt"}`),
		fakellm.ToolCall("edit_file", `{"path":"README.md","old_string":"Helo","new_string":"Hello"}`),
		fakellm.ToolCall("complete", `{"summary":"fixed the typo"}`),
		fakellm.ToolCall("apply_patch", `{"id":"p1"}`),
		fakellm.ToolCall("complete", `{"summary":"both done"}`),
	)
	run := dockertest.RunID + "-delegate"
	queue := []tasks.Task{{
		ID: "deleg", Repo: repo, Prompt: "Do two things.", Image: dockertest.Busybox(t), Model: "gpt-4o-mini",
		BudgetUSD: 1, MaxSteps: 30, Delegate: tasks.Delegate{MaxDepth: 1},
	}}
	sum, err := Run(context.Background(), queue, Options{RunID: run}, deps(t, store, srv))
	if err != nil {
		t.Fatal(err)
	}
	r := sum.Results[0]
	if r.Status != tasks.StatusSucceeded || r.Commit == "" || r.Steps != 9 {
		t.Fatalf("result = %+v, want succeeded in 9 steps", r)
	}
	files := strings.Fields(git(t, repo, "ls-tree", "-r", "--name-only", "agent/deleg"))
	if want := []string{"README.md", "link", "run.sh", "seen.txt"}; !slices.Equal(files, want) {
		t.Errorf("files on the branch = %q, want %q", files, want)
	}
	if got := git(t, repo, "show", "agent/deleg:README.md"); got != "# Hello" {
		t.Errorf("README.md = %q, want the isolated sub-agent's fix", got)
	}
	if got := git(t, repo, "show", "agent/deleg:seen.txt"); got != "from one\n-rwxr-xr-x\na.txt\nREADME.md\na.txt\nlink\nrun.sh\nseen.txt" {
		t.Errorf("the isolated sub-agent saw:\n%s\nwant the parent's workspace as it was, without .git", got)
	}
	git(t, repo, "fsck", "--strict")
	if left := runContainers(t, run); len(left) != 0 {
		t.Errorf("sandboxes left: %q", left)
	}
	// The isolated sub-agent's events are nested in the trajectory.
	traj, err := os.ReadFile(TrajectoryPath(store.Dir(), "deleg", r.Attempt))
	if err != nil || !strings.Contains(string(traj), `"agent":"2"`) || !strings.Contains(string(traj), `"agent":"2"`) || !strings.Contains(string(traj), `"agent":"1"`) {
		t.Errorf("the trajectory has no nested sub-agent events (%v)", err)
	}
}

// Stopping the run while an isolated sub-agent works ends the task as
// interrupted and removes the sub-agent's sandbox with the parent's.
func TestDelegateCancelClosesIsolatedSandbox(t *testing.T) {
	repo := fixtureRepo(t)
	store, err := tasks.OpenStore(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	defer store.Close()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	run := dockertest.RunID + "-delegate-cancel"
	var during []string
	var once sync.Once
	srv := fakellm.New(t, fakellm.ToolCall("delegate", `{"task":"Work long.","isolated":true}`))
	srv.Forever(fakellm.Func(func(req fakellm.Request) fakellm.Turn {
		once.Do(func() {
			during = runContainers(t, run)
			cancel()
		})
		return fakellm.ToolCall("run_command", `{"command":"sleep 1"}`)
	}))
	queue := []tasks.Task{{
		ID: "cancel", Repo: repo, Prompt: "Delegate.", Image: dockertest.Busybox(t), Model: "gpt-4o-mini",
		BudgetUSD: 1, Delegate: tasks.Delegate{MaxDepth: 1},
	}}
	sum, err := Run(ctx, queue, Options{RunID: run}, deps(t, store, srv))
	if err != nil {
		t.Fatal(err)
	}
	if r := sum.Results[0]; r.Status != tasks.StatusInterrupted {
		t.Errorf("status %s (%s), want interrupted", r.Status, r.Error)
	}
	if len(during) != 2 {
		t.Errorf("sandboxes while the sub-agent worked: %q, want the parent's and the sub-agent's", during)
	}
	if left := runContainers(t, run); len(left) != 0 {
		t.Errorf("sandboxes left: %q", left)
	}
}

// An isolated sub-agent that changes a protected path (with a command,
// which the file tools' check does not see) leaves a patch that apply_patch
// refuses whole; the task goes on and its branch has none of it.
func TestDelegatePatchOnProtectedPathRefused(t *testing.T) {
	repo := fixtureRepo(t)
	store, err := tasks.OpenStore(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	defer store.Close()
	srv := fakellm.New(t,
		fakellm.ToolCall("delegate", `{"task":"Change CI.","isolated":true}`),
		fakellm.ToolCall("run_command", `{"command":"mkdir -p .github/workflows && echo evil > .github/workflows/ci.yml && echo ok > notes.txt"}`),
		fakellm.ToolCall("complete", `{"summary":"changed"}`),
		fakellm.ToolCall("apply_patch", `{"id":"p1"}`),
		fakellm.ToolCall("write_file", `{"path":"own.txt","content":"mine\n"}`),
		fakellm.ToolCall("complete", `{"summary":"the patch was refused"}`),
	)
	queue := []tasks.Task{{
		ID: "protected", Repo: repo, Prompt: "Delegate.", Image: dockertest.Busybox(t), Model: "gpt-4o-mini",
		BudgetUSD: 1, Delegate: tasks.Delegate{MaxDepth: 1},
		Policy: policy.Policy{Protected: []string{".github/"}},
	}}
	sum, err := Run(context.Background(), queue, Options{RunID: dockertest.RunID}, deps(t, store, srv))
	if err != nil {
		t.Fatal(err)
	}
	if r := sum.Results[0]; r.Status != tasks.StatusSucceeded {
		t.Fatalf("result = %+v", r)
	}
	files := strings.Fields(git(t, repo, "ls-tree", "-r", "--name-only", "agent/protected"))
	if want := []string{"README.md", "own.txt"}; !slices.Equal(files, want) {
		t.Errorf("files on the branch = %q, want %q", files, want)
	}
	reqs := srv.Requests()
	last := reqs[4].Messages
	if got := last[len(last)-1].Content; !strings.Contains(got, ".github/workflows/ci.yml") || !strings.Contains(got, "protected path") {
		t.Errorf("apply_patch result = %q, want a refusal naming the protected path", got)
	}
}
