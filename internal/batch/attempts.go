package batch

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"golang.org/x/sync/errgroup"

	"github.com/go-git/go-git/v5/plumbing"

	"github.com/runner-dev/runner/budget"
	"github.com/runner-dev/runner/gitops"
	"github.com/runner-dev/runner/internal/redact"
	"github.com/runner-dev/runner/tasks"
)

// AttemptEnv names the variable that tells the sandbox of a best-of-n
// attempt its number, 1 to attempts.
const AttemptEnv = "RUNNER_ATTEMPT"

// AttemptProgress is a Progress that also hears about each attempt of a
// best-of-n task: Progress.Started and Finished tell about the task as a
// whole, these about one attempt, whose Task has Try set (PhaseProgress
// calls for it carry the same Task).
type AttemptProgress interface {
	Progress
	AttemptStarted(t tasks.Task, attempt int)
	AttemptFinished(t tasks.Task, r tasks.Result)
}

// errWon is the cause with which the attempts of a task are stopped when
// another one passed (stop_on_success).
var errWon = errors.New("another attempt passed first")

// tryPlan is what one attempt of a best-of-n task knows of its task.
type tryPlan struct {
	set     *bestOf
	attempt int // the run attempt of the task, shared by its tries
}

// bestOf is a task run as several attempts. Its tries run in the run's
// errgroup, each taking a slot like a task does, dispatched in queue order;
// the task itself takes none, so a queue of such tasks cannot deadlock
// waiting for slots its own tries hold, and one task's tries cannot keep
// a later task from its turn longer than its place in the queue says.
type bestOf struct {
	plan    taskPlan
	opt     Options
	deps    Deps
	attempt int
	started time.Time
	// meter is the task's: every try's meter is its child, so the task's
	// budget caps all of them together, reserve before call.
	meter *budget.Meter
	// stop ends the tries still working when one passes (stop_on_success).
	stop   context.Context
	cancel context.CancelCauseFunc

	mu     sync.Mutex
	tries  []tasks.Result // by number - 1; Status "" until the try ends
	passed []int          // the tries that passed, in the order they ended
	// warnings go to the task's result.
	warnings []string
	pending  sync.WaitGroup
}

// runBestOf dispatches the tries of the task of p to g, in order, and
// records the task's result (handing it to done) once they all ended.
// The caller waits for wg before Run returns.
func runBestOf(ctx context.Context, g *errgroup.Group, wg *sync.WaitGroup, p taskPlan, run *budget.Meter, opt Options, deps Deps,
	done func(tasks.Result, error)) {
	b, err := startBestOf(p, run, opt, deps)
	if err != nil {
		r := tasks.Result{ID: p.task.ID, Repo: redact.URL(p.task.Repo), Status: tasks.StatusError, Error: err.Error(), BestOf: p.task.Attempts}
		done(r, err)
		return
	}
	for k := 1; k <= p.task.Attempts; k++ {
		if b.tries[k-1].Status != "" {
			continue // a stopped run finished it
		}
		b.pending.Add(1)
		g.Go(func() error {
			defer b.pending.Done()
			b.runTry(ctx, k, run)
			return nil
		})
	}
	wg.Add(1)
	go func() {
		defer wg.Done()
		b.pending.Wait()
		done(b.finish())
	}()
}

// startBestOf starts the run attempt of the task and takes over the tries
// an earlier, stopped run finished, their cost counted against the
// task's budget.
func startBestOf(p taskPlan, run *budget.Meter, opt Options, deps Deps) (*bestOf, error) {
	t := p.task
	meter, err := budget.NewMeter(t.BudgetUSD, run)
	if err != nil {
		return nil, err
	}
	attempt, err := deps.Store.Start(t.ID)
	if err != nil {
		return nil, err
	}
	if deps.Progress != nil {
		deps.Progress.Started(t, attempt)
	}
	b := &bestOf{plan: p, opt: opt, deps: deps, attempt: attempt, started: time.Now().UTC(), meter: meter,
		tries: make([]tasks.Result, t.Attempts)}
	b.stop, b.cancel = context.WithCancelCause(context.Background())
	if err := deps.Store.SaveDefinition(t); err != nil {
		// Kept for runner continue; the task runs without it.
		b.warnings = append(b.warnings, "the task cannot be continued later: "+err.Error())
	}
	for k, r := range deps.Store.Tries(t.ID) {
		if k < 1 || k > t.Attempts || r.BestOf != t.Attempts {
			continue
		}
		b.tries[k-1] = r
		cost, _ := budget.FromUSD(r.CostUSD)
		u := budget.Usage{PromptTokens: r.Tokens.In, CachedTokens: r.Tokens.Cached, CompletionTokens: r.Tokens.Out}
		if err := meter.Carry(cost, u, int64(r.Calls)); err != nil {
			return nil, err
		}
		b.ended(k, r)
	}
	return b, nil
}

// runTry runs attempt k, unless the task or the run was stopped before
// its slot came.
func (b *bestOf) runTry(ctx context.Context, k int, run *budget.Meter) {
	t := b.plan.task
	switch {
	case b.stop.Err() != nil:
		b.ended(k, tasks.Result{ID: t.ID, Attempt: b.attempt, Try: k, BestOf: t.Attempts, Status: tasks.StatusCancelled,
			Error: "not started: " + context.Cause(b.stop).Error()})
		return
	case ctx.Err() != nil:
		b.ended(k, tasks.Result{ID: t.ID, Try: k, BestOf: t.Attempts, Status: tasks.StatusInterrupted,
			Error: "the run was stopped before this attempt started"})
		return
	}
	if callsEndpoint(t) {
		if err := b.deps.Endpoint.Ready(ctx); err != nil {
			r := notStarted(t, err)
			r.Try, r.BestOf = k, t.Attempts
			b.ended(k, r)
			return
		}
	}
	tp := b.plan
	tp.try = &tryPlan{set: b, attempt: b.attempt}
	tp.task = tryTask(t, k)
	r, _ := runTask(ctx, tp, run, b.opt, b.deps)
	b.ended(k, r)
}

// tryTask is the copy of t attempt k works on: on its attempt branch, with
// its number in the sandbox's environment, and no budget of its own (the
// task's meter is its parent).
func tryTask(t tasks.Task, k int) tasks.Task {
	t.Try = k
	t.Branch = tasks.AttemptBranch(t.Branch, k)
	t.BudgetUSD = 0
	t.Env = maps.Clone(t.Env)
	if t.Env == nil {
		t.Env = map[string]string{}
	}
	t.Env[AttemptEnv] = strconv.Itoa(k)
	return t
}

// ended takes the result of try k; the first pass stops the others when
// the task stops on success.
func (b *bestOf) ended(k int, r tasks.Result) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.tries[k-1] = r
	if r.Status == tasks.StatusSucceeded {
		b.passed = append(b.passed, k)
		if b.plan.task.StopsOnSuccess() {
			b.cancel(fmt.Errorf("%w (attempt %d)", errWon, k))
		}
	}
}

// bindTry makes ctx, the context the agent and the check of a try work
// under, end too when another attempt of the task passes.
func (w *work) bindTry(ctx context.Context) (context.Context, func()) {
	if w.plan.try == nil {
		return ctx, func() {}
	}
	stop := w.plan.try.set.stop
	c, cancel := context.WithCancelCause(ctx)
	unhook := context.AfterFunc(stop, func() { cancel(context.Cause(stop)) })
	return c, func() { unhook(); cancel(nil) }
}

// tryOutcome turns the end of a try that another attempt stopped into
// status cancelled, whose work is still committed. The user stopping the
// run still interrupts it.
func (w *work) tryOutcome(status tasks.Status, errText string) (tasks.Status, string) {
	if w.plan.try == nil || w.stop.Err() != nil || w.plan.try.set.stop.Err() == nil {
		return status, errText
	}
	if status == tasks.StatusSucceeded {
		return status, errText // it passed anyway
	}
	return tasks.StatusCancelled, "stopped: " + context.Cause(w.plan.try.set.stop).Error()
}

// choose is the try kept on the task's branch: the first to pass, or the
// cheapest that passed (the lowest number on a tie); 0 when none did, and
// when pick: cheapest could not see every try end because the run was
// stopped (a rerun runs the tries left, then chooses).
func (b *bestOf) choose() int {
	if len(b.passed) == 0 {
		return 0
	}
	if b.plan.task.Pick == tasks.PickCheapest && slices.ContainsFunc(b.tries, func(r tasks.Result) bool { return !r.Status.Final() }) {
		return 0
	}
	if b.plan.task.Pick != tasks.PickCheapest {
		return b.passed[0]
	}
	best := slices.Min(b.passed)
	for _, k := range b.passed {
		if c, bc := b.tries[k-1].CostUSD, b.tries[best-1].CostUSD; c < bc || c == bc && k < best {
			best = k
		}
	}
	return best
}

// finish chooses the try to keep, points the task's branch at its commit
// and records the task's result, which sums up every try.
func (b *bestOf) finish() (res tasks.Result, recordErr error) {
	t := b.plan.task
	b.mu.Lock()
	defer b.mu.Unlock()
	res = tasks.Result{ID: t.ID, Attempt: b.attempt, Repo: redact.URL(t.Repo), Ref: t.Ref, StartedAt: b.started, BestOf: t.Attempts}
	res.Warnings = b.warnings
	kept := b.choose()
	b.sumUp(&res, kept)
	if kept > 0 {
		r := b.tries[kept-1]
		res.Status, res.Summary, res.Steps, res.Base, res.Questions = r.Status, r.Summary, r.Steps, r.Base, r.Questions
		res.Kept = kept
		if r.Commit != "" {
			if err := b.keep(r); err != nil {
				res.Status, res.Error = tasks.StatusError, fmt.Sprintf("attempt %d passed, but its commit is not on %s: %v", kept, t.Branch, err)
			} else {
				res.Branch, res.Commit = t.Branch, r.Commit
			}
		}
	} else {
		res.Status, res.Error = b.failure()
	}
	s := b.meter.Summary()
	res.CostUSD, res.OverrunUSD, res.Calls = s.SpentUSD, s.OverrunUSD, int(s.Calls)
	res.Tokens = tasks.Tokens{In: s.PromptTokens, Cached: s.CachedTokens, Out: s.CompletionTokens}
	if c := b.meter.TightestCap(); c > 0 {
		res.BudgetUSD, res.BudgetShare = c.USD(), float64(budget.Nanodollars(s.SpentNanodollars))/float64(c)
	}
	res.FinishedAt = time.Now().UTC()
	res.Duration = tasks.Duration(res.FinishedAt.Sub(res.StartedAt))
	res.Error = redact.New(b.deps.Secrets...).String(res.Error)
	res.Summary = redact.New(b.deps.Secrets...).String(res.Summary)
	if recordErr = b.deps.Store.Record(res); recordErr != nil {
		res.Error = strings.TrimSpace(res.Error + "; recording the result failed: " + recordErr.Error())
	}
	if b.deps.Progress != nil {
		b.deps.Progress.Finished(t, res)
	}
	return res, recordErr
}

// sumUp lists every try in the task's result.
func (b *bestOf) sumUp(res *tasks.Result, kept int) {
	for i, r := range b.tries {
		res.Tries = append(res.Tries, tasks.AttemptResult{Try: i + 1, Status: r.Status, CostUSD: r.CostUSD, Branch: r.Branch, Commit: r.Commit,
			Chosen: i+1 == kept, Attempt: r.Attempt, Error: r.Error})
	}
}

// keep points the task's branch at the kept try's commit. A branch there
// is moved only with --force or when an earlier run of this task left it.
func (b *bestOf) keep(r tasks.Result) error {
	t := b.plan.task
	force := b.opt.Force
	if c, found, err := gitops.ReadBranch(t.Repo, t.Branch); err == nil && found && madeForTask(c.Message, t.ID) {
		force = true
	}
	return gitops.PointBranch(t.Repo, t.Branch, plumbing.NewHash(r.Commit), force)
}

// failure is the status and error of a task whose branch gets no try:
// interrupted if the run was stopped before one ended (a rerun runs it),
// else the status of the first try (by number) not cancelled.
func (b *bestOf) failure() (tasks.Status, string) {
	var parts []string
	status := tasks.Status("")
	for i, r := range b.tries {
		if !r.Status.Final() {
			return tasks.StatusInterrupted, fmt.Sprintf("the run was stopped before attempt %d ended", i+1)
		}
		if status == "" && r.Status != tasks.StatusCancelled {
			status = r.Status
		}
		parts = append(parts, fmt.Sprintf("attempt %d %s", i+1, r.Status))
	}
	if status == "" {
		status = tasks.StatusError
	}
	return status, "no attempt passed: " + strings.Join(parts, ", ")
}

// bestOfProblems checks a best-of-n task before the run: its repository
// must be local, where the attempt branches are kept, and those branches
// free, as the task's own branch must be.
func bestOfProblems(t tasks.Task, where string, opt Options, deps Deps) []string {
	if !t.BestOf() {
		return nil
	}
	if tasks.IsRemote(t.Repo) {
		return []string{where + ": attempts: a task with more than one attempt needs a local repository, where its attempt branches are kept"}
	}
	if opt.Force {
		return nil
	}
	var problems []string
	for k := 1; k <= t.Attempts; k++ {
		tt := t
		tt.Branch = tasks.AttemptBranch(t.Branch, k)
		if msg := branchTaken(tt, deps.Store); msg != "" {
			problems = append(problems, where+": "+msg)
		}
	}
	return problems
}

// started tells the progress that a task, or one of its attempts, began.
func started(deps Deps, t tasks.Task, attempt int) {
	switch ap, ok := deps.Progress.(AttemptProgress); {
	case t.Try > 0 && ok:
		ap.AttemptStarted(t, attempt)
	case t.Try == 0 && deps.Progress != nil:
		deps.Progress.Started(t, attempt)
	}
}

// finished tells the progress that a task, or one of its attempts, ended.
func finished(deps Deps, t tasks.Task, r tasks.Result) {
	switch ap, ok := deps.Progress.(AttemptProgress); {
	case t.Try > 0 && ok:
		ap.AttemptFinished(t, r)
	case t.Try == 0 && deps.Progress != nil:
		deps.Progress.Finished(t, r)
	}
}

// taskMeter is m, or for a try its task's meter, which all its tries
// share: the parent of the try's own meter, and what the progress reports
// as the task's spending.
func (w *work) taskMeter(m *budget.Meter) *budget.Meter {
	if w.plan.try != nil {
		return w.plan.try.set.meter
	}
	return m
}
