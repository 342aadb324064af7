package batch

import (
	"context"
	"os/exec"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/runner-dev/runner/internal/dockertest"
	"github.com/runner-dev/runner/internal/fakellm"
	"github.com/runner-dev/runner/sandbox"
	"github.com/runner-dev/runner/sandbox/docker"
	"github.com/runner-dev/runner/tasks"
)

// containersOf lists, with the docker CLI, every container (running or
// not) labelled with the sandbox run id runID.
func containersOf(t *testing.T, runID string) []string {
	t.Helper()
	out, err := exec.Command("docker", "ps", "-a", "--filter", "label="+docker.LabelRun+"="+runID,
		"--format", "{{.Names}}").CombinedOutput()
	if err != nil {
		t.Fatalf("docker ps: %v: %s", err, out)
	}
	return strings.Fields(string(out))
}

// slowSandbox runs every command with no timeout of its own: a command
// that ignores its timeout and runs until its context ends.
type slowSandbox struct{ sandbox.Sandbox }

func (s slowSandbox) Exec(ctx context.Context, cmd string, opt sandbox.ExecOptions) (sandbox.ExecResult, error) {
	opt.Timeout = time.Hour
	return s.Sandbox.Exec(ctx, cmd, opt)
}

func (s slowSandbox) Checkpoint(ctx context.Context) error {
	return s.Sandbox.(sandbox.Checkpointer).Checkpoint(ctx)
}

func (s slowSandbox) Restore(ctx context.Context) error {
	return s.Sandbox.(sandbox.Checkpointer).Restore(ctx)
}

// A task whose deadline (its timeout plus the margin) passes while a
// command runs — in the agent's loop or in the check — ends as time_limit,
// not interrupted; its work so far is committed on its branch, marked
// partial; its container is removed; and a rerun does not run it again.
func TestTaskDeadlineIsTimeLimitWithPartialWork(t *testing.T) {
	// The timeout covers cloning and starting the sandbox too: long enough
	// for a loaded engine to start one before the deadline.
	const taskTimeout = 15 * time.Second
	repo := fixtureRepo(t)
	dir := t.TempDir()
	store, err := tasks.OpenStore(dir)
	if err != nil {
		t.Fatal(err)
	}
	srv := fakellm.New(t,
		fakellm.ToolCall("write_file", `{"path":"notes.txt","content":"partial\n"}`),
		fakellm.ToolCall("run_command", `{"command":"sleep 600","timeout":1800}`),
		fakellm.ToolCall("write_file", `{"path":"notes.txt","content":"checked\n"}`),
		fakellm.ToolCall("complete", `{"summary":"Wrote the notes."}`),
	)
	d := deps(t, store, srv)
	start := d.StartSandbox
	d.StartSandbox = func(ctx context.Context, cfg sandbox.Config) (sandbox.Sandbox, error) {
		sb, err := start(ctx, cfg)
		if err != nil {
			return nil, err
		}
		return slowSandbox{sb}, nil
	}
	queue := []tasks.Task{
		{ID: "stuck", Repo: repo, Prompt: "Write notes, then wait.", Timeout: taskTimeout},
		{ID: "slowcheck", Repo: repo, Prompt: "Write notes.", Timeout: taskTimeout,
			Check: "echo ran > check.txt; sleep 600", CheckTimeout: time.Hour},
	}
	for i := range queue {
		queue[i].Image, queue[i].Model, queue[i].BudgetUSD = dockertest.Busybox(t), "gpt-4o-mini", 1
	}
	// A margin shorter than cloning and starting a sandbox puts the task's
	// deadline before the end of the agent's own time limit.
	opt := Options{RunID: dockertest.RunID + "-deadline", Margin: time.Millisecond}
	sum, err := Run(context.Background(), queue, opt, d)
	if err != nil {
		t.Fatal(err)
	}
	wantFiles := map[string]map[string]string{
		"stuck":     {"notes.txt": "partial"},
		"slowcheck": {"notes.txt": "checked"},
	}
	// What the check wrote before the deadline is not the agent's work.
	notOnBranch := map[string]string{"slowcheck": "check.txt"}
	for _, r := range sum.Results {
		if r.Status != tasks.StatusTimeLimit || !strings.Contains(r.Error, "time limit") || r.Commit == "" {
			t.Errorf("%s: result = %+v; want time_limit with a commit", r.ID, r)
			continue
		}
		branch := "agent/" + r.ID
		if got := git(t, repo, "rev-parse", branch); got != r.Commit {
			t.Errorf("%s: branch %s at %s, result says %s", r.ID, branch, got, r.Commit)
		}
		for file, want := range wantFiles[r.ID] {
			if got := git(t, repo, "show", branch+":"+file); got != want {
				t.Errorf("%s: %s on the branch = %q, want %q", r.ID, file, got, want)
			}
		}
		if file := notOnBranch[r.ID]; file != "" {
			if files := git(t, repo, "ls-tree", "-r", "--name-only", branch); slices.Contains(strings.Fields(files), file) {
				t.Errorf("%s: %s, written by the check, is on the branch:\n%s", r.ID, file, files)
			}
		}
		msg := git(t, repo, "log", "-1", "--format=%B", branch)
		if !strings.HasPrefix(msg, "runner: "+r.ID+" (partial: time_limit)") || !strings.Contains(msg, "Runner-Status: time_limit") {
			t.Errorf("%s: commit message does not mark partial work at the time limit:\n%s", r.ID, msg)
		}
	}
	if left := containersOf(t, opt.RunID); len(left) > 0 {
		t.Errorf("containers left after the run: %v", left)
	}
	store.Close()

	// A rerun finds both tasks finished.
	store, err = tasks.OpenStore(dir)
	if err != nil {
		t.Fatal(err)
	}
	defer store.Close()
	asked := len(srv.Requests())
	sum, err = Run(context.Background(), queue, opt, deps(t, store, srv))
	if err != nil {
		t.Fatal(err)
	}
	if sum.Skipped != 2 || len(srv.Requests()) != asked {
		t.Errorf("rerun skipped %d tasks and asked the model %d more times; want 2 skipped, no call",
			sum.Skipped, len(srv.Requests())-asked)
	}
}
