package batch

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"testing"

	"github.com/runner-dev/runner/internal/dockertest"
	"github.com/runner-dev/runner/internal/fakellm"
	"github.com/runner-dev/runner/tasks"
)

// phaseLog records what a PhaseProgress hears, one line per call.
type phaseLog struct {
	mu    sync.Mutex
	lines []string
	steps []Step
}

func (l *phaseLog) add(format string, a ...any) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.lines = append(l.lines, fmt.Sprintf(format, a...))
}

func (l *phaseLog) Skipped(t tasks.Task, _ tasks.Result) { l.add("skipped %s", t.ID) }
func (l *phaseLog) Started(t tasks.Task, attempt int)    { l.add("started %s", t.ID) }
func (l *phaseLog) Finished(t tasks.Task, r tasks.Result) {
	l.add("finished %s %s", t.ID, r.Status)
}
func (l *phaseLog) Phase(t tasks.Task, p Phase, step int) {
	if p == PhaseStep {
		l.add("%s %d", p, step)
		return
	}
	l.add("%s", p)
}
func (l *phaseLog) Step(t tasks.Task, s Step) {
	l.add("done %d", s.N)
	l.mu.Lock()
	l.steps = append(l.steps, s)
	l.mu.Unlock()
}

// A progress that follows phases hears each of them in order, each model
// call with what it cost, and the check again after it failed once.
func TestPhaseProgress(t *testing.T) {
	repo := fixtureRepo(t)
	store, err := tasks.OpenStore(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	defer store.Close()
	srv := fakellm.New(t,
		fakellm.ToolCall("complete", `{"summary":"nothing to do"}`).WithUsage(1000, 10, 200),
		fakellm.ToolCall("edit_file", `{"path":"README.md","old_string":"Helo","new_string":"Hello"}`).WithUsage(1100, 20, 0),
		fakellm.ToolCall("complete", `{"summary":"Fixed the typo."}`).WithUsage(1200, 30, 0),
	)
	queue := []tasks.Task{{
		ID: "typo", Repo: repo, Prompt: "Fix the typo.", Check: "grep -q Hello README.md", CheckRetries: 1,
		Image: dockertest.Busybox(t), Model: "gpt-4o-mini", BudgetUSD: 1,
	}}
	log := &phaseLog{}
	d := deps(t, store, srv)
	d.Progress = log
	sum, err := Run(context.Background(), queue, Options{RunID: dockertest.RunID}, d)
	if err != nil {
		t.Fatal(err)
	}
	want := []string{"started typo", "cloning", "sandbox", "step 1", "done 1", "check", "step 2", "done 2",
		"step 3", "done 3", "check", "committing", "finished typo succeeded"}
	if got := strings.Join(log.lines, ", "); got != strings.Join(want, ", ") {
		t.Errorf("progress heard\n  %s\nwant\n  %s", got, strings.Join(want, ", "))
	}
	r := sum.Results[0]
	if len(log.steps) != 3 {
		t.Fatalf("%d steps heard, want 3", len(log.steps))
	}
	first, last := log.steps[0], log.steps[2]
	if first.Tokens != (tasks.Tokens{In: 1000, Cached: 200, Out: 10}) || first.CostUSD <= 0 || first.TaskUSD != first.CostUSD {
		t.Errorf("first step = %+v", first)
	}
	if last.TaskUSD != r.CostUSD || last.RunUSD != r.CostUSD {
		t.Errorf("last step says the task spent $%v and the run $%v; the result says $%v", last.TaskUSD, last.RunUSD, r.CostUSD)
	}
}
