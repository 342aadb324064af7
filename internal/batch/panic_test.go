package batch

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/runner-dev/runner/agent"
	"github.com/runner-dev/runner/internal/dockertest"
	"github.com/runner-dev/runner/internal/fakellm"
	"github.com/runner-dev/runner/internal/panics"
	"github.com/runner-dev/runner/sandbox"
	"github.com/runner-dev/runner/tasks"
)

// scripts answers each task from its own list of turns, whatever order
// concurrent tasks call in: the task is recognised by its prompt.
type scripts struct {
	mu    sync.Mutex
	turns map[string][]fakellm.Turn
}

func (s *scripts) next(r fakellm.Request) fakellm.Turn {
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, m := range r.Messages {
		for prompt, turns := range s.turns {
			if m.Role == "user" && strings.Contains(m.Content, prompt) && len(turns) > 0 {
				s.turns[prompt] = turns[1:]
				return turns[0]
			}
		}
	}
	return fakellm.APIError(400, "invalid_request_error", "", "no scripted turn left for this task")
}

// panickyModel panics on the task's goroutine at the second call of the
// task whose prompt holds "Crash the model".
type panickyModel struct {
	agent.Model
	mu    sync.Mutex
	calls int
}

func (m *panickyModel) Complete(ctx context.Context, req agent.Request) (agent.Response, error) {
	if strings.Contains(req.Messages[1].Content, "Crash the model") {
		m.mu.Lock()
		m.calls++
		n := m.calls
		m.mu.Unlock()
		if n == 2 {
			panic("model bug on the task goroutine")
		}
	}
	return m.Model.Complete(ctx, req)
}

// explodingSandbox starts a goroutine that panics when asked to run
// "explode", and meanwhile runs a command that would take ten minutes: the
// panic must end the task without waiting for the command.
type explodingSandbox struct{ sandbox.Sandbox }

func (s explodingSandbox) Exec(ctx context.Context, cmd string, opt sandbox.ExecOptions) (sandbox.ExecResult, error) {
	if cmd == "explode" {
		panics.Go(ctx, func() error { panic("sandbox bug on a goroutine of the task") })
		cmd = "sleep 600"
	}
	return s.Sandbox.Exec(ctx, cmd, opt)
}

// A panic in one task, on its own goroutine or on one it started, ends that
// task as error with the stack in its trajectory and its container
// removed; the run and the other tasks go on.
func TestPanicEndsOnlyItsTask(t *testing.T) {
	repo := fixtureRepo(t)
	store, err := tasks.OpenStore(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	defer store.Close()
	script := &scripts{turns: map[string][]fakellm.Turn{
		"Write one.": {
			fakellm.ToolCall("write_file", `{"path":"one.txt","content":"1\n"}`),
			fakellm.ToolCall("complete", `{"summary":"Wrote one."}`),
		},
		"Write two.": {
			fakellm.ToolCall("write_file", `{"path":"two.txt","content":"2\n"}`),
			fakellm.ToolCall("complete", `{"summary":"Wrote two."}`),
		},
		"Crash the model.": {
			fakellm.ToolCall("write_file", `{"path":"crash.txt","content":"x\n"}`),
		},
		"Crash the sandbox.": {
			fakellm.ToolCall("write_file", `{"path":"crash.txt","content":"x\n"}`),
			fakellm.ToolCall("run_command", `{"command":"explode"}`),
		},
	}}
	srv := fakellm.New(t)
	srv.Forever(fakellm.Func(script.next))
	d := deps(t, store, srv)
	newModel, start := d.NewModel, d.StartSandbox
	d.NewModel = func(task tasks.Task, traj *agent.Trajectory) (agent.Model, error) {
		m, err := newModel(task, traj)
		return &panickyModel{Model: m}, err
	}
	d.StartSandbox = func(ctx context.Context, cfg sandbox.Config) (sandbox.Sandbox, error) {
		sb, err := start(ctx, cfg)
		if err != nil || cfg.TaskID != "boom-goroutine" {
			return sb, err
		}
		return explodingSandbox{sb}, nil
	}
	queue := []tasks.Task{
		{ID: "one", Prompt: "Write one."},
		{ID: "boom-main", Prompt: "Crash the model."},
		{ID: "boom-goroutine", Prompt: "Crash the sandbox."},
		{ID: "two", Prompt: "Write two."},
	}
	for i := range queue {
		queue[i].Repo, queue[i].Image, queue[i].Model, queue[i].BudgetUSD = repo, dockertest.Busybox(t), "gpt-4o-mini", 1
		queue[i].Timeout = time.Minute // bounds a task the panic fails to end
	}
	opt := Options{RunID: dockertest.RunID + "-panic", Concurrency: 4, RunBudgetUSD: 10}
	sum, err := Run(context.Background(), queue, opt, d)
	if err != nil {
		t.Fatal(err)
	}

	rs := map[string]tasks.Result{}
	for _, r := range sum.Results {
		rs[r.ID] = r
	}
	for _, id := range []string{"one", "two"} {
		if r := rs[id]; r.Status != tasks.StatusSucceeded || r.Commit == "" {
			t.Errorf("%s = %+v; want succeeded with a commit", id, r)
		}
	}
	wantStack := map[string]string{"boom-main": "batch.(*panickyModel).Complete", "boom-goroutine": "batch.explodingSandbox.Exec.func1"}
	for id, frame := range wantStack {
		r := rs[id]
		if r.Status != tasks.StatusError || !strings.Contains(r.Error, "internal error: panic:") || !strings.Contains(r.Error, "bug") ||
			r.Commit != "" || r.Branch != "" {
			t.Errorf("%s = %+v; want error naming the panic, no branch", id, r)
		}
		if out := git(t, repo, "branch", "--list", "agent/"+id); out != "" {
			t.Errorf("%s: a branch was made: %s", id, out)
		}
		panicEvent := trajectoryEvent(t, store, id, agent.EventPanic)
		if panicEvent == nil || !strings.Contains(panicEvent.Text, frame) || !strings.Contains(panicEvent.Error, "bug") {
			t.Errorf("%s: panic event %+v; want the panic with a stack through %s", id, panicEvent, frame)
		}
	}
	if left := containersOf(t, opt.RunID); len(left) > 0 {
		t.Errorf("containers left after the run: %v", left)
	}
	if sum.Spend.ReservedUSD != 0 {
		t.Errorf("the run's meter still holds $%v after the run", sum.Spend.ReservedUSD)
	}
}

// trajectoryEvent returns the first event of type typ in the trajectory
// of the first attempt of task id, or nil.
func trajectoryEvent(t *testing.T, store *tasks.Store, id, typ string) *agent.Event {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(store.Dir(), "trajectories", id+".1.jsonl"))
	if err != nil {
		t.Fatal(err)
	}
	for _, line := range strings.Split(strings.TrimSpace(string(b)), "\n") {
		var e agent.Event
		if err := json.Unmarshal([]byte(line), &e); err != nil {
			t.Fatalf("%s trajectory: %v", id, err)
		}
		if e.Type == typ {
			return &e
		}
	}
	return nil
}
