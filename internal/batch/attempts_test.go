package batch

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/runner-dev/runner/agent"
	"github.com/runner-dev/runner/internal/fakellm"
	"github.com/runner-dev/runner/tasks"
)

// tryModels gives each attempt of a best-of-n task its own scripted
// model: the server of "<model>#<attempt>".
func (r *memRun) tryModels(d Deps) Deps {
	d.NewModel = func(task tasks.Task, _ *agent.Trajectory) (agent.Model, error) {
		name := fmt.Sprintf("%s#%d", task.Model, task.Try)
		srv, ok := r.models[name]
		if !ok {
			r.t.Errorf("no script for model %q", name)
			return nil, fmt.Errorf("no script for %q", name)
		}
		return agent.NewOpenAI(agent.OpenAIConfig{BaseURL: srv.URL(), APIKey: "sk-batch-inmem-key-123456"})
	}
	return d
}

func (r *memRun) runTries(ctx context.Context, queue []tasks.Task, opt Options, progress Progress) Summary {
	r.t.Helper()
	opt.RunID = "inmem"
	d := r.tryModels(r.deps())
	d.Progress = progress
	sum, err := Run(ctx, queue, opt, d)
	if err != nil {
		r.t.Fatalf("Run: %v", err)
	}
	for _, sb := range r.backend.Started() {
		if !sb.Closed() {
			r.t.Errorf("a sandbox of the run was left open")
		}
	}
	return sum
}

// resultLines reads results.jsonl as written.
func resultLines(t *testing.T, out string) []tasks.Result {
	t.Helper()
	data, err := os.ReadFile(filepath.Join(out, tasks.ResultsFile))
	if err != nil {
		t.Fatal(err)
	}
	var rs []tasks.Result
	for _, line := range strings.Split(strings.TrimSpace(string(data)), "\n") {
		var r tasks.Result
		if err := json.Unmarshal([]byte(line), &r); err != nil {
			t.Fatalf("line %q: %v", line, err)
		}
		rs = append(rs, r)
	}
	return rs
}

func tryStatuses(r tasks.Result) string {
	var s []string
	for _, a := range r.Tries {
		mark := ""
		if a.Chosen {
			mark = "*"
		}
		s = append(s, fmt.Sprintf("%d:%s%s", a.Try, a.Status, mark))
	}
	return strings.Join(s, " ")
}

// Three attempts where only the second passes the check: its commit is
// on the task's branch, the first's failed work stays on its attempt
// branch, and the third, whose turn came after the second passed, never
// starts. results.jsonl has a line per attempt that ran, then the task's.
func TestBestOfKeepsTheAttemptThatPassed(t *testing.T) {
	r := newMemRun(t)
	task := r.task("typo")
	task.Check, task.Attempts, task.Model = "grep -q Hello README.md", 3, "gpt-4o-mini"
	r.script("gpt-4o-mini#1", wrongFix, complete.WithUsage(100, 10, 0))
	r.script("gpt-4o-mini#2", fixTypo, complete.WithUsage(100, 10, 0))
	r.script("gpt-4o-mini#3")
	sum := r.runTries(context.Background(), []tasks.Task{task}, Options{Concurrency: 1}, nil)
	res := sum.Results[0]
	if res.Status != tasks.StatusSucceeded || res.Kept != 2 || res.Branch != "agent/typo" || res.BestOf != 3 {
		t.Fatalf("task result %+v; want succeeded, attempt 2 kept on agent/typo", res)
	}
	if got, want := tryStatuses(res), "1:check_failed 2:succeeded* 3:cancelled"; got != want {
		t.Errorf("attempts %q, want %q", got, want)
	}
	if got := branch(t, r.repo, "agent/typo"); got != "runner: typo | succeeded | # Hello" {
		t.Errorf("agent/typo: %q", got)
	}
	if a, b := git(t, r.repo, "rev-parse", "agent/typo"), git(t, r.repo, "rev-parse", "agent/typo-attempt-2"); a != b || a != res.Commit {
		t.Errorf("agent/typo at %s, agent/typo-attempt-2 at %s, result names %s; want one commit", a, b, res.Commit)
	}
	if got := branch(t, r.repo, "agent/typo-attempt-1"); got != "runner: typo (partial: check_failed) | check_failed | # Hallo" {
		t.Errorf("agent/typo-attempt-1: %q", got)
	}
	if got := branch(t, r.repo, "agent/typo-attempt-3"); got != "" {
		t.Errorf("attempt 3 never started but has a branch: %q", got)
	}
	lines := resultLines(t, r.store.Dir())
	if len(lines) != 3 || lines[0].Try != 1 || lines[1].Try != 2 || lines[2].Try != 0 || lines[2].Kept != 2 {
		t.Fatalf("results.jsonl: %+v; want attempt 1, attempt 2, then the task", lines)
	}
	if lines[1].Branch != "agent/typo-attempt-2" || lines[0].Branch != "agent/typo-attempt-1" {
		t.Errorf("attempt lines name branches %q, %q", lines[0].Branch, lines[1].Branch)
	}
	if sumCost := lines[0].CostUSD + lines[1].CostUSD; res.CostUSD < sumCost*0.999999 || res.CostUSD > sumCost*1.000001 || res.CostUSD == 0 {
		t.Errorf("task cost $%v, attempts $%v + $%v", res.CostUSD, lines[0].CostUSD, lines[1].CostUSD)
	}
	for k := 1; k <= 2; k++ {
		if _, err := os.Stat(filepath.Join(r.store.Dir(), "trajectories", tasks.TrajectoryName("typo", 1, k))); err != nil {
			t.Errorf("attempt %d has no trajectory: %v", k, err)
		}
	}
	if f := r.store.Finished()["typo"]; f.Kept != 2 {
		t.Errorf("the store stands the task at %+v, not its own line", f)
	}
}

// With pick: cheapest every attempt runs to its end, and the one that
// cost least is kept whatever the order they ended in.
func TestBestOfPicksTheCheapest(t *testing.T) {
	r := newMemRun(t)
	task := r.task("cheap")
	task.Model, task.Attempts, task.Pick = "gpt-4o-mini", 3, tasks.PickCheapest
	task.Check = "grep -q Hello README.md"
	for k, completion := range map[int]int64{1: 900, 2: 100, 3: 500} {
		r.script(fmt.Sprintf("gpt-4o-mini#%d", k), fixTypo.WithUsage(1000, completion, 0), complete.WithUsage(1000, completion, 0))
	}
	res := r.runTries(context.Background(), []tasks.Task{task}, Options{Concurrency: 3}, nil).Results[0]
	if res.Status != tasks.StatusSucceeded || res.Kept != 2 {
		t.Fatalf("task result %+v (attempts %s); want attempt 2, the cheapest, kept", res, tryStatuses(res))
	}
	if got, want := tryStatuses(res), "1:succeeded 2:succeeded* 3:succeeded"; got != want {
		t.Errorf("attempts %q, want %q", got, want)
	}
	if !(res.Tries[1].CostUSD < res.Tries[2].CostUSD && res.Tries[2].CostUSD < res.Tries[0].CostUSD) {
		t.Errorf("costs %+v", res.Tries)
	}
	if git(t, r.repo, "rev-parse", "agent/cheap") != git(t, r.repo, "rev-parse", "agent/cheap-attempt-2") {
		t.Errorf("agent/cheap is not attempt 2's commit")
	}
}

// attemptLog records what a run tells about attempts, and runs hooks.
type attemptLog struct {
	mu       sync.Mutex
	events   []string
	finished func(t tasks.Task, r tasks.Result)
}

func (l *attemptLog) add(s string) { l.mu.Lock(); l.events = append(l.events, s); l.mu.Unlock() }

func (l *attemptLog) Skipped(t tasks.Task, _ tasks.Result) { l.add("skipped " + t.ID) }
func (l *attemptLog) Started(t tasks.Task, attempt int) {
	l.add(fmt.Sprintf("started %s %d", t.ID, attempt))
}
func (l *attemptLog) Finished(t tasks.Task, r tasks.Result) {
	l.add(fmt.Sprintf("finished %s %s", t.ID, r.Status))
}
func (l *attemptLog) AttemptStarted(t tasks.Task, attempt int) {
	l.add(fmt.Sprintf("attempt %d started", t.Try))
}
func (l *attemptLog) AttemptFinished(t tasks.Task, r tasks.Result) {
	l.add(fmt.Sprintf("attempt %d %s", t.Try, r.Status))
	if l.finished != nil {
		l.finished(t, r)
	}
}

// With stop_on_success, the attempt that passes stops one still working:
// it ends as cancelled, its sandbox closed, and its work so far is
// committed on its attempt branch. The slow attempt is waiting on the
// model, as the second one passes, by construction: the second's model
// answers once the first's call has arrived.
func TestStopOnSuccessCancelsASlowAttempt(t *testing.T) {
	r := newMemRun(t)
	task := r.task("race")
	task.Attempts, task.Check = 2, "grep -q Hello README.md"
	waiting := make(chan struct{})
	r.script("race#1", wrongFix, fakellm.Func(func(fakellm.Request) fakellm.Turn {
		close(waiting)
		return fakellm.Hang()
	}))
	r.script("race#2", fakellm.Func(func(fakellm.Request) fakellm.Turn {
		<-waiting
		return fixTypo
	}), complete)
	log := &attemptLog{}
	res := r.runTries(context.Background(), []tasks.Task{task}, Options{Concurrency: 2}, log).Results[0]
	if res.Status != tasks.StatusSucceeded || res.Kept != 2 {
		t.Fatalf("task result %+v; want attempt 2 kept", res)
	}
	if got, want := tryStatuses(res), "1:cancelled 2:succeeded*"; got != want {
		t.Errorf("attempts %q, want %q", got, want)
	}
	if !strings.Contains(res.Tries[0].Error, "attempt 2") {
		t.Errorf("attempt 1's error %q does not name the attempt that passed", res.Tries[0].Error)
	}
	if got := branch(t, r.repo, "agent/race-attempt-1"); got != "runner: race (partial: cancelled) | cancelled | # Hallo" {
		t.Errorf("agent/race-attempt-1: %q", got)
	}
	want := []string{"attempt 1 cancelled", "attempt 2 succeeded", "finished race succeeded"}
	var got []string
	for _, e := range log.events {
		if strings.Contains(e, "cancelled") || strings.Contains(e, "succeeded") {
			got = append(got, e)
		}
	}
	if strings.Join(got, "|") != "attempt 2 succeeded|attempt 1 cancelled|finished race succeeded" {
		t.Errorf("events %q; want %q in the order the attempts ended", log.events, want)
	}
}

// A rerun after a stopped run takes over the attempts that ended: they do
// not run again (their scripts hold no more turns), their cost counts in
// the task's, and only the attempts left run.
func TestRerunDoesNotRedoFinishedAttempts(t *testing.T) {
	r := newMemRun(t)
	task := r.task("resume")
	task.Attempts, task.Check, task.Model = 2, "grep -q Hello README.md", "gpt-4o-mini"
	r.script("gpt-4o-mini#1", wrongFix.WithUsage(1000, 50, 0), complete.WithUsage(1000, 50, 0))
	ctx, stop := context.WithCancel(context.Background())
	defer stop()
	log := &attemptLog{finished: func(t tasks.Task, _ tasks.Result) {
		if t.Try == 1 {
			stop() // the user stops the run as the first attempt ends
		}
	}}
	first := r.runTries(ctx, []tasks.Task{task}, Options{Concurrency: 1}, log).Results[0]
	if first.Status != tasks.StatusInterrupted {
		t.Fatalf("first run: %+v; want interrupted", first)
	}
	r.reopen()
	r.script("gpt-4o-mini#2", fixTypo.WithUsage(1000, 50, 0), complete.WithUsage(1000, 50, 0))
	res := r.runTries(context.Background(), []tasks.Task{task}, Options{Concurrency: 1}, nil).Results[0]
	if res.Status != tasks.StatusSucceeded || res.Kept != 2 || res.Attempt != 2 {
		t.Fatalf("rerun: %+v; want run attempt 2 keeping attempt 2", res)
	}
	if res.Tries[0].Attempt != 1 || res.Tries[0].Status != tasks.StatusCheckFailed || res.Tries[1].Attempt != 2 {
		t.Errorf("attempts %+v; want the first taken over from run attempt 1", res.Tries)
	}
	if want := res.Tries[0].CostUSD + res.Tries[1].CostUSD; res.CostUSD < want*0.999999 || res.CostUSD > want*1.000001 {
		t.Errorf("task cost $%v; the attempts cost $%v", res.CostUSD, want)
	}
	if got := branch(t, r.repo, "agent/resume"); got != "runner: resume | succeeded | # Hello" {
		t.Errorf("agent/resume: %q", got)
	}
}

// slotLog counts the attempts running at once.
type slotLog struct {
	attemptLog
	running, peak int
}

func (l *slotLog) AttemptStarted(t tasks.Task, attempt int) {
	l.mu.Lock()
	l.running++
	l.peak = max(l.peak, l.running)
	l.mu.Unlock()
}

func (l *slotLog) AttemptFinished(t tasks.Task, r tasks.Result) {
	l.mu.Lock()
	l.running--
	l.mu.Unlock()
}

// Attempts take slots like tasks: a queue of tasks with more attempts than
// there are slots runs to its end (the tasks waiting for their attempts
// hold no slot, so none can wait on another forever), and never more
// attempts run at once than --concurrency allows.
func TestAttemptsShareTheSlots(t *testing.T) {
	r := newMemRun(t)
	var queue []tasks.Task
	for i := range 3 {
		task := r.task(fmt.Sprint("q", i))
		task.Attempts = 3
		no := false
		task.StopOnSuccess = &no
		for k := 1; k <= 3; k++ {
			r.script(fmt.Sprintf("%s#%d", task.Model, k), fixTypo, complete)
		}
		queue = append(queue, task)
	}
	log := &slotLog{}
	sum := r.runTries(context.Background(), queue, Options{Concurrency: 2}, log)
	for _, res := range sum.Results {
		if got := strings.ReplaceAll(tryStatuses(res), "*", ""); res.Status != tasks.StatusSucceeded || res.Kept == 0 ||
			got != "1:succeeded 2:succeeded 3:succeeded" {
			t.Errorf("%s: attempts %s: %+v", res.ID, tryStatuses(res), res.Tries)
		}
	}
	if log.peak > 2 || log.peak == 0 {
		t.Errorf("%d attempts ran at once with 2 slots", log.peak)
	}
}

// runner continue goes on from a task run once: a best-of-n task none of
// whose attempts passed is refused, with the reason.
func TestContinueRefusesABestOfTask(t *testing.T) {
	r := newMemRun(t)
	task := r.task("nopass")
	task.Attempts, task.Check = 2, "grep -q Hello README.md"
	r.script("nopass#1", wrongFix, complete)
	r.script("nopass#2", wrongFix, complete)
	res := r.runTries(context.Background(), []tasks.Task{task}, Options{Concurrency: 1}, nil).Results[0]
	if res.Status != tasks.StatusCheckFailed || res.Kept != 0 || res.Branch != "" || !strings.Contains(res.Error, "no attempt passed") {
		t.Fatalf("task result %+v; want check_failed, nothing kept", res)
	}
	if got := branch(t, r.repo, "agent/nopass"); got != "" {
		t.Errorf("agent/nopass made though no attempt passed: %q", got)
	}
	_, err := r.cont(context.Background(), ContinueOptions{ID: "nopass"})
	if !errors.Is(err, ErrCannotContinue) || !strings.Contains(err.Error(), "ran as 2 attempts") {
		t.Errorf("continue: %v; want a refusal naming the attempts", err)
	}
}

// pick: cheapest must see every attempt end: a run stopped after one
// passed leaves the task interrupted, and the rerun runs the attempt left
// and keeps it if it is cheaper.
func TestPickCheapestWaitsForEveryAttemptAcrossARerun(t *testing.T) {
	r := newMemRun(t)
	task := r.task("cheap-rerun")
	task.Attempts, task.Pick, task.Model = 2, tasks.PickCheapest, "gpt-4o-mini"
	r.script("gpt-4o-mini#1", fixTypo.WithUsage(1000, 900, 0), complete.WithUsage(1000, 900, 0))
	ctx, stop := context.WithCancel(context.Background())
	defer stop()
	log := &attemptLog{finished: func(t tasks.Task, _ tasks.Result) { stop() }}
	first := r.runTries(ctx, []tasks.Task{task}, Options{Concurrency: 1}, log).Results[0]
	if first.Status != tasks.StatusInterrupted || first.Kept != 0 || first.Branch != "" {
		t.Fatalf("first run: %+v; want interrupted with nothing kept", first)
	}
	r.reopen()
	r.script("gpt-4o-mini#2", fixTypo.WithUsage(1000, 100, 0), complete.WithUsage(1000, 100, 0))
	res := r.runTries(context.Background(), []tasks.Task{task}, Options{Concurrency: 1}, nil).Results[0]
	if res.Status != tasks.StatusSucceeded || res.Kept != 2 {
		t.Fatalf("rerun: %+v (attempts %s); want attempt 2, the cheaper, kept", res, tryStatuses(res))
	}
}
