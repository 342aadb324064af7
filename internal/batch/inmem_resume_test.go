package batch

import (
	"context"
	"fmt"
	"path/filepath"
	"strings"
	"testing"

	"github.com/runner-dev/runner/internal/fakellm"
	"github.com/runner-dev/runner/sandbox"
	"github.com/runner-dev/runner/sandbox/inmem"
	"github.com/runner-dev/runner/tasks"
)

// A task of a remote repository pushes its branch when it succeeded, or
// when its file says push: true (partial work too, marked as such); never
// when the file says push: false, and never a branch that was not made.
// The remote is a bare repository reached through a file:// URL.
func TestPushDecisions(t *testing.T) {
	r := newMemRun(t)
	remote := filepath.Join(t.TempDir(), "remote.git")
	git(t, filepath.Dir(remote), "init", "-q", "--bare", "-b", "main", remote)
	git(t, r.repo, "push", "-q", remote, "main")
	yes, no := true, false
	checked := func(id string, push *bool) tasks.Task {
		task := r.task(id)
		task.Repo, task.Check, task.Push = "file://"+remote, "grep -q Hello README.md", push
		return task
	}
	queue := []tasks.Task{
		checked("ok-default", nil), checked("failed-default", nil), checked("failed-push", &yes),
		checked("ok-no-push", &no), checked("unchanged-push", &yes),
	}
	r.script("ok-default", fixTypo, complete)
	r.script("failed-default", wrongFix, complete)
	r.script("failed-push", wrongFix, complete)
	r.script("ok-no-push", fixTypo, complete)
	r.script("unchanged-push", fakellm.ToolCall("complete", `{"summary":"Nothing to change."}`))
	sum := r.run(context.Background(), queue, Options{})
	want := map[string]struct {
		status tasks.Status
		pushed bool
		remote string
	}{
		"ok-default":     {tasks.StatusSucceeded, true, "runner: ok-default | succeeded | # Hello"},
		"failed-default": {tasks.StatusCheckFailed, false, ""},
		"failed-push":    {tasks.StatusCheckFailed, true, "runner: failed-push (partial: check_failed) | check_failed | # Hallo"},
		"ok-no-push":     {tasks.StatusSucceeded, false, ""},
		"unchanged-push": {tasks.StatusCheckFailed, false, ""},
	}
	for i, res := range sum.Results {
		w := want[queue[i].ID]
		if res.Status != w.status || res.Pushed != w.pushed {
			t.Errorf("%s: status %s, pushed %v; want %s, %v (error %q)", res.ID, res.Status, res.Pushed, w.status, w.pushed, res.Error)
		}
		if got := branch(t, remote, queue[i].Branch); got != w.remote {
			t.Errorf("%s: the remote's %s is %q, want %q", res.ID, queue[i].Branch, got, w.remote)
		}
	}
	if got := git(t, remote, "for-each-ref", "--format=%(refname)"); got != "refs/heads/agent/failed-push\nrefs/heads/agent/ok-default\nrefs/heads/main" {
		t.Errorf("the remote's branches:\n%s", got)
	}
}

// A rerun skips the tasks that finished, whatever their status, and runs
// again the one that the stopped run interrupted and the one it never
// started; the interrupted attempt left no branch.
func TestResumeSkipsFinishedAndRedoesInterrupted(t *testing.T) {
	r := newMemRun(t)
	queue := []tasks.Task{r.task("done"), r.task("failed"), r.task("stopped"), r.task("never")}
	queue[1].Check = "false"
	ctx, stop := context.WithCancel(context.Background())
	defer stop()
	// The user stops the run while the third task runs a command.
	r.backend.Exec = func(ctx context.Context, sb *inmem.Sandbox, cmd string, opt sandbox.ExecOptions) (sandbox.ExecResult, error) {
		if cmd == "make" {
			stop()
			<-ctx.Done()
			return sandbox.ExecResult{}, fmt.Errorf("exec: %w", ctx.Err())
		}
		return inmem.Builtin(ctx, sb, cmd, opt)
	}
	r.script("done", fixTypo, complete)
	r.script("failed", complete)
	r.script("stopped", fixTypo, runCommand("make"))
	r.script("never")
	first := r.run(ctx, queue, Options{})
	statuses := func(s Summary) string {
		var out []string
		for _, res := range s.Results {
			out = append(out, fmt.Sprintf("%s:%s:%d", res.ID, res.Status, res.Attempt))
		}
		return strings.Join(out, " ")
	}
	if got, want := statuses(first), "done:succeeded:1 failed:check_failed:1 stopped:interrupted:1 never:interrupted:0"; got != want {
		t.Fatalf("first run: %s, want %s", got, want)
	}
	if got := branch(t, r.repo, "agent/stopped"); got != "" {
		t.Errorf("the interrupted task left a branch: %s", got)
	}
	doneCommit := first.Results[0].Commit

	// The rerun: a new process, the same out directory.
	r.reopen()
	r.backend = &inmem.Backend{}
	r.script("done")
	r.script("failed")
	r.script("stopped", fixTypo, complete)
	r.script("never", fixTypo, complete)
	second := r.run(context.Background(), queue, Options{})
	if got, want := statuses(second), "done:succeeded:1 failed:check_failed:1 stopped:succeeded:2 never:succeeded:1"; got != want {
		t.Errorf("rerun: %s, want %s", got, want)
	}
	if second.Skipped != 2 || second.Results[0].Commit != doneCommit {
		t.Errorf("rerun skipped %d tasks, kept commit %s; want 2 and %s", second.Skipped, second.Results[0].Commit, doneCommit)
	}
	if n := len(r.backend.Started()); n != 2 {
		t.Errorf("the rerun started %d sandboxes, want 2", n)
	}
	for _, id := range []string{"stopped", "never"} {
		if got, want := branch(t, r.repo, "agent/"+id), "runner: "+id+" | succeeded | # Hello"; got != want {
			t.Errorf("branch agent/%s: %q, want %q", id, got, want)
		}
	}
	finished := r.store.Finished()
	if len(finished) != 4 {
		t.Errorf("the store has %d finished tasks, want 4: %v", len(finished), finished)
	}
}
