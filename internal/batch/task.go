package batch

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"time"

	"github.com/go-git/go-git/v5/plumbing"

	"github.com/runner-dev/runner/agent"
	"github.com/runner-dev/runner/budget"
	"github.com/runner-dev/runner/gitops"
	"github.com/runner-dev/runner/internal/mcphost"
	"github.com/runner-dev/runner/internal/panics"
	"github.com/runner-dev/runner/internal/redact"
	"github.com/runner-dev/runner/sandbox"
	"github.com/runner-dev/runner/tasks"
)

// Deadlines of a task. The agent's time limit is the task's timeout; the
// task as a whole (clone to commit) may take margin longer, to leave time
// for the check, the snapshot and the commit. When that deadline passes,
// the snapshot and the commit of the partial work still get commitGrace.
const (
	defaultMargin = 15 * time.Minute
	commitGrace   = 5 * time.Minute
)

// runTask runs one task from clone to recorded result. It never panics out
// and always records a result, unless the out directory itself fails.
func runTask(ctx context.Context, p taskPlan, run *budget.Meter, opt Options, deps Deps) (res tasks.Result, recordErr error) {
	t := p.task
	res = tasks.Result{ID: t.ID, Repo: redact.URL(t.Repo), Ref: t.Ref, StartedAt: time.Now().UTC()}
	var attempt int
	var err error
	if p.try != nil {
		attempt, res.Try, res.BestOf = p.try.attempt, t.Try, t.Attempts
	} else if p.cont != nil {
		attempt, err = deps.Store.StartContinuation(t.ID, p.cont.from.Attempt)
		res.Continues = p.cont.from.Attempt
	} else {
		attempt, err = deps.Store.Start(t.ID)
	}
	if err != nil {
		res.Status, res.Error = tasks.StatusError, err.Error()
		return res, err
	}
	res.Attempt = attempt
	if p.cont == nil && p.try == nil {
		// Kept for runner continue; the task runs without it.
		if err := deps.Store.SaveDefinition(t); err != nil {
			res.Warnings = append(res.Warnings, "the task cannot be continued later: "+err.Error())
		}
	}
	started(deps, t, attempt)
	defer func() {
		if v := recover(); v != nil {
			res.Status, res.Error = tasks.StatusError, fmt.Sprintf("internal error: %v", v)
		}
		secrets := redact.New(deps.Secrets...)
		res.Error, res.Summary = secrets.String(res.Error), secrets.String(res.Summary)
		res.FinishedAt = time.Now().UTC()
		res.Duration = tasks.Duration(res.FinishedAt.Sub(res.StartedAt))
		if recordErr = deps.Store.Record(res); recordErr != nil {
			res.Error = strings.TrimSpace(res.Error + "; recording the result failed: " + recordErr.Error())
		}
		finished(deps, t, res)
	}()
	// A panic on any goroutine working for the task ends the task, not the
	// run: the goroutine recovers it (see package panics) and reports it
	// to the task's context, which halts the task.
	halt, crash := context.WithCancelCause(ctx)
	defer crash(nil)
	w := &work{task: t, plan: p, opt: opt, deps: deps, res: &res, stop: ctx, halt: halt, crash: crash}
	// The whole task, clone to commit, has a deadline; the agent's own time
	// limit ends its work earlier, leaving time for the rest. Passing it is
	// time_limit; only the run's ctx ending (the user's stop) interrupts.
	tctx, cancel := context.WithTimeout(panics.WithHandler(halt, w.crashed), taskDeadline(t, opt))
	defer cancel()
	w.run(tctx, run)
	return res, nil
}

// margin is Options.Margin or its default.
func (o Options) margin() time.Duration {
	if o.Margin > 0 {
		return o.Margin
	}
	return defaultMargin
}

// work is the state of one task while it runs.
type work struct {
	task tasks.Task
	plan taskPlan
	opt  Options
	deps Deps
	res  *tasks.Result
	// stop ends when the run (not just this task) is stopped; halt ends
	// then too, and when a goroutine of the task panics (crash).
	stop  context.Context
	halt  context.Context
	crash context.CancelCauseFunc

	mu    sync.Mutex
	panic *panics.Error // the first panic of a goroutine of the task

	repoPath string // where the branch is written: the user's repo, or the clone of a URL
	clone    *gitops.Workspace
	sb       sandbox.Sandbox
	traj     *agent.Trajectory
	// lost is set when the workspace may have lost part of the agent's
	// work (see execCheck): then nothing is committed.
	lost   error
	egress *egressWatch // nil without an allowlist
	// sbConfig is the configuration the task's sandbox started with.
	sbConfig sandbox.Config
	env      environment // the image, and what the repository's configuration adds
}

func (w *work) fail(status tasks.Status, err error) {
	w.res.Status, w.res.Error = status, err.Error()
}

func (w *work) run(ctx context.Context, run *budget.Meter) {
	t := w.task
	meter, err := budget.NewMeter(t.BudgetUSD, w.taskMeter(run))
	if err != nil {
		w.fail(tasks.StatusError, err)
		return
	}
	defer func() { w.account(meter) }()

	trajFile, err := os.Create(filepath.Join(w.deps.Store.Dir(), "trajectories", tasks.TrajectoryName(t.ID, w.res.Attempt, t.Try)))
	if err != nil {
		w.fail(tasks.StatusError, fmt.Errorf("create trajectory: %w", err))
		return
	}
	defer trajFile.Close()
	w.traj = agent.NewTrajectory(trajFile, w.deps.Secrets...)
	w.watchSteps(w.taskMeter(meter), run)
	defer func() {
		if err := w.traj.Err(); err != nil {
			w.res.Error = strings.TrimPrefix(w.res.Error+"; the trajectory is incomplete: "+err.Error(), "; ")
		}
	}()
	// Runs after the sandbox is closed, before the trajectory is.
	defer func() {
		e := w.panicked()
		if v := recover(); v != nil {
			e = panics.New(v)
		}
		if e != nil {
			w.endWithPanic(e)
		}
	}()

	// Clone into a private directory, removed at the end.
	dir, err := os.MkdirTemp(w.deps.WorkDir, "runner-"+t.ID+"-")
	if err != nil {
		w.fail(tasks.StatusError, fmt.Errorf("create workspace: %w", err))
		return
	}
	defer os.RemoveAll(dir)
	w.phase(PhaseCloning)
	ref := t.Ref
	if c := w.plan.cont; c != nil {
		ref = c.base()
	}
	w.clone, err = gitops.Clone(ctx, gitops.CloneOptions{URL: t.Repo, Ref: ref, Dir: dir, Depth: 1, Auth: w.deps.GitAuth})
	if err != nil {
		w.fail(w.statusOf(ctx, tasks.StatusError), fmt.Errorf("clone: %w", err))
		return
	}
	w.res.Base = w.clone.Base.String()
	if c := w.plan.cont; c != nil {
		// The branch is reviewed against where the task started.
		w.res.Base = c.from.Base
	}
	w.res.Warnings = append(w.res.Warnings, w.clone.Warnings...)
	w.repoPath = t.Repo
	if tasks.IsRemote(t.Repo) {
		w.repoPath = dir
	}

	w.phase(PhaseSandbox)
	if w.env, err = w.resolveImage(ctx, dir); err != nil {
		w.fail(w.statusOf(ctx, tasks.StatusSandboxError), err)
		return
	}
	w.res.Warnings = append(w.res.Warnings, w.env.warnings...)
	image, releaseEnv, ok := w.prepareEnvironment(ctx, dir)
	if !ok {
		return
	}
	defer releaseEnv() // after the sandbox is closed

	cfg := sandbox.Config{
		Image: image, Runtime: t.Runtime, Network: string(t.Network), Memory: t.Limits.Memory, Disk: t.Limits.Disk, CPUs: t.Limits.CPUs, Pids: t.Limits.Pids,
		Lifetime: sandboxLifetime(t, w.opt), Env: envList(withImageEnv(t, w.env.env)), Workspace: dir, RunID: w.opt.RunID, TaskID: t.ID,
		CACerts: t.CACerts,
	}
	// With an allowlist, the agent and the check work under a context the
	// egress proxy's end cancels: without its proxy the sandbox has no
	// network, and the task ends as sandbox_error.
	workCtx := ctx
	if t.Network == tasks.NetworkAllowlist {
		var stopWork context.CancelCauseFunc
		workCtx, stopWork = context.WithCancelCause(ctx)
		defer stopWork(nil)
		w.egress = &egressWatch{traj: w.traj, halt: stopWork}
		cfg.Network, cfg.Egress, cfg.EgressReport = "", t.Allow, w.egress.report
	}
	w.sbConfig = cfg
	workCtx, unbind := w.bindTry(workCtx)
	defer unbind()
	sb, err := w.deps.StartSandbox(ctx, cfg)
	if err != nil {
		w.fail(w.statusOf(ctx, tasks.StatusSandboxError), fmt.Errorf("start sandbox: %w", err))
		return
	}
	w.sb = sb
	defer sb.Close(context.WithoutCancel(ctx))

	status, summary, agentErr := w.work(workCtx, meter)
	refused, egressErr := w.egress.result()
	w.res.RefusedHosts = refused
	if egressErr != nil {
		status, agentErr = tasks.StatusSandboxError, egressErr.Error()
	}
	status, agentErr = w.tryOutcome(status, agentErr)
	w.res.Status, w.res.Summary = status, summary
	if agentErr != "" {
		w.res.Error = agentErr
	}
	if status == tasks.StatusInterrupted || w.panicked() != nil {
		return // the user stopped the run, or a bug did: no half-done branch
	}
	// Even after a sandbox failure the workspace may still be there (the
	// daemon hiccuped, the container survived): keep what can be kept.
	if w.lost != nil {
		if !strings.Contains(w.res.Error, w.lost.Error()) {
			w.res.Error = strings.TrimPrefix(w.res.Error+"; "+w.lost.Error(), "; ")
		}
		w.res.Error += "; nothing committed"
		return
	}
	cctx, cancelCommit := w.commitContext(ctx)
	defer cancelCommit()
	w.commit(cctx, meter)
}

// commitContext is the context of the snapshot, the commit and the push:
// the task's deadline, or commitGrace from now if that is later (the
// deadline may have passed, ending the agent or the check), and the end of
// the run if the user stops it.
func (w *work) commitContext(ctx context.Context) (context.Context, context.CancelFunc) {
	deadline := time.Now().Add(commitGrace)
	if d, ok := ctx.Deadline(); ok && d.After(deadline) {
		deadline = d
	}
	cctx, cancel := context.WithDeadline(context.WithoutCancel(ctx), deadline)
	unhook := context.AfterFunc(w.halt, cancel)
	return cctx, func() { unhook(); cancel() }
}

// crashed hears of a panic caught on a goroutine of the task: the first
// is kept, and the task is halted.
func (w *work) crashed(e *panics.Error) {
	w.mu.Lock()
	if w.panic == nil {
		w.panic = e
	}
	w.mu.Unlock()
	w.crash(e)
}

func (w *work) panicked() *panics.Error {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.panic
}

// endWithPanic records a panic of the task: its stack in the trajectory,
// and the status error. Nothing was committed.
func (w *work) endWithPanic(e *panics.Error) {
	w.traj.Record(agent.Event{Type: agent.EventPanic, Error: e.Error(), Text: e.Stack})
	w.fail(tasks.StatusError, fmt.Errorf("internal error: %w (the stack is in the trajectory)", e))
	if w.res.Commit == "" {
		w.res.Branch = ""
	}
}

// work runs the agent, then the check with its retries. It returns the
// task's status and the agent's summary.
func (w *work) work(ctx context.Context, meter *budget.Meter) (tasks.Status, string, string) {
	t := w.task
	model, err := w.deps.NewModel(t, w.traj)
	if err != nil {
		return tasks.StatusModelError, "", err.Error()
	}
	host, err := mcphost.Start(ctx, t.MCPServers, w.deps.getenv, "runner")
	if err != nil {
		return tasks.StatusError, "", err.Error()
	}
	defer host.Close()
	cfg := w.opt.Agent
	cfg.HostTools = host.Tools()
	cfg.Model, cfg.Price, cfg.Meter = t.Model, w.plan.price, meter
	cfg.MaxSteps, cfg.TimeLimit = t.MaxSteps, t.Timeout
	cfg.Network = t.Network == tasks.NetworkBridge || t.Network == tasks.NetworkAllowlist
	if t.Network == tasks.NetworkAllowlist {
		cfg.Egress = t.Allow
	}
	cfg.Ask, cfg.Approve, cfg.Trajectory, cfg.Policy = w.deps.Ask, w.deps.Approve, w.traj, t.Policy
	cfg.Delegate = agent.Delegation{MaxDepth: t.Delegate.MaxDepth, MaxSteps: t.Delegate.MaxSteps, Isolate: w.isolator(w.sbConfig)}
	a := agent.New(model, w.sb, agent.Task{ID: t.ID, Prompt: t.Prompt}, cfg)
	var out agent.Outcome
	if c := w.plan.cont; c != nil {
		out = a.Resume(ctx, c.history, c.prompt, c.from.Attempt)
	} else {
		out = a.Run(ctx)
	}
	for retry := 0; ; retry++ {
		w.res.Questions = out.Questions
		w.res.Steps = out.Steps
		if out.Status != agent.StatusCompleted {
			return agentStatus(out.Status), out.Summary, out.Error
		}
		if t.Check == "" {
			return tasks.StatusSucceeded, out.Summary, ""
		}
		passed, feedback, err := w.check(ctx)
		switch {
		case err != nil:
			status := w.statusOf(ctx, tasks.StatusSandboxError)
			if status == tasks.StatusTimeLimit {
				return status, out.Summary, fmt.Sprintf("time limit: the task's deadline (timeout %s, plus %s) passed during the check: %v",
					t.Timeout, w.opt.margin(), err)
			}
			return status, out.Summary, "check: " + err.Error()
		case passed:
			return tasks.StatusSucceeded, out.Summary, ""
		case retry >= t.CheckRetries:
			return tasks.StatusCheckFailed, out.Summary, "the check failed: " + firstLine(feedback)
		}
		out = a.Continue(ctx, feedback)
	}
}

// check runs the task's check command in the sandbox.
func (w *work) check(ctx context.Context) (passed bool, feedback string, err error) {
	w.phase(PhaseCheck)
	res, err := w.execCheck(ctx)
	if err != nil {
		return false, "", err
	}
	passed = res.ExitCode == 0 && !res.TimedOut
	w.traj.Record(agent.Event{Type: agent.EventCheck, Text: w.task.Check, Status: agent.Status(fmt.Sprint("exit ", res.ExitCode)),
		Summary: res.Output, IsError: !passed})
	if passed {
		return true, "", nil
	}
	why := fmt.Sprintf("exited with code %d", res.ExitCode)
	if res.TimedOut {
		why = fmt.Sprintf("did not finish within %s", w.task.CheckTimeout)
	}
	return false, fmt.Sprintf("The check `%s` %s. Its output:\n\n%s\n\nFix the problem, verify it, then call complete again.",
		w.task.Check, why, res.Output), nil
}

// commit copies the workspace out and commits it on the task's branch,
// then pushes it if the task asks.
func (w *work) commit(ctx context.Context, meter *budget.Meter) {
	t := w.task
	w.phase(PhaseCommitting)
	snap, err := w.sb.Snapshot(ctx)
	if err != nil && w.res.Status == tasks.StatusSandboxError {
		w.res.Error += "; nothing committed: the workspace could not be copied out: " + err.Error()
		return
	}
	if err != nil {
		w.fail(w.statusOf(ctx, tasks.StatusSandboxError), fmt.Errorf("snapshot: %w", err))
		return
	}
	defer snap.Close()
	var force bool
	var expect plumbing.Hash
	switch c := w.plan.cont; {
	case c != nil && tasks.IsRemote(t.Repo):
		// The clone is this attempt's own, at the earlier commit; the
		// push, a fast-forward only, moves the remote's branch forward.
		force = true
	case c != nil:
		expect = c.expect() // moved forward from there, never forced
	default:
		force = w.opt.Force || w.res.Attempt > 1 && w.branchFromEarlierAttempt()
	}
	w.account(meter)
	cr, err := gitops.CommitTree(ctx, w.repoPath, w.clone.Base, snap, gitops.CommitOptions{
		Branch: t.Branch, Message: redact.New(w.deps.Secrets...).String(commitMessage(t, w.res)),
		Trailers: trailers(t, w.res), Force: force, Expect: expect, Protected: t.Policy.Protected, Exclude: t.Exclude,
		MaxCommitSize: t.Limits.CommitSize,
	})
	switch {
	case w.plan.cont != nil && (errors.Is(err, gitops.ErrBranchChanged) || errors.Is(err, gitops.ErrBranchExists)):
		w.fail(tasks.StatusError, fmt.Errorf("not committed: branch %s moved while the task went on (someone committed to it): %w", t.Branch, err))
		return
	case errors.Is(err, gitops.ErrProtectedPath), errors.Is(err, gitops.ErrCommitTooLarge):
		w.fail(tasks.StatusPolicyViolation, fmt.Errorf("not committed: %w", err))
		return
	case err != nil:
		w.fail(w.statusOf(ctx, tasks.StatusError), fmt.Errorf("commit: %w", err))
		return
	}
	w.res.Warnings = append(w.res.Warnings, cr.Warnings...)
	w.res.SetExcluded(cr.Excluded, cr.ExcludedFiles)
	if cr.NoChanges {
		if c := w.plan.cont; c != nil && c.from.Commit != "" {
			// Nothing new: the branch stays at the earlier commit.
			w.res.Branch, w.res.Commit, w.res.Pushed = c.from.Branch, c.from.Commit, c.from.Pushed
		}
		return
	}
	w.res.Branch, w.res.Commit = t.Branch, cr.Hash.String()
	if t.ShouldPush(w.res.Status == tasks.StatusSucceeded) {
		w.phase(PhasePushing)
		err := gitops.Push(ctx, w.repoPath, gitops.RemoteSpec{URL: t.Repo, Auth: w.deps.GitAuth}, t.Branch, w.opt.Force)
		if err != nil {
			w.res.Error = strings.TrimSpace(w.res.Error + "; push: " + err.Error())
			if w.res.Status == tasks.StatusSucceeded {
				w.res.Status = tasks.StatusError
			}
			return
		}
		w.res.Pushed = true
	}
}

// branchFromEarlierAttempt reports whether the task's branch was left by
// an earlier attempt of this task: its commit's trailers name the task and
// its only parent is the base this attempt starts from.
func (w *work) branchFromEarlierAttempt() bool {
	c, found, err := gitops.ReadBranch(w.repoPath, w.task.Branch)
	return err == nil && found && madeForTask(c.Message, w.task.ID) &&
		len(c.Parents) == 1 && c.Parents[0] == w.clone.Base
}

// account copies the meter's totals into the result.
func (w *work) account(meter *budget.Meter) {
	s := meter.Summary()
	w.res.CostUSD, w.res.OverrunUSD = s.SpentUSD, s.OverrunUSD
	if c := meter.TightestCap(); c > 0 {
		w.res.BudgetUSD, w.res.BudgetShare = c.USD(), float64(budget.Nanodollars(s.SpentNanodollars))/float64(c)
	}
	w.res.Calls = int(s.Calls)
	w.res.Tokens = tasks.Tokens{In: s.PromptTokens, Cached: s.CachedTokens, Out: s.CompletionTokens}
}

// statusOf is interrupted when the run was stopped, time_limit when the
// task's deadline passed, else fallback.
func (w *work) statusOf(ctx context.Context, fallback tasks.Status) tasks.Status {
	switch {
	case w.stop.Err() != nil:
		return tasks.StatusInterrupted
	case ctx.Err() != nil:
		return tasks.StatusTimeLimit
	}
	return fallback
}

func agentStatus(s agent.Status) tasks.Status {
	switch s {
	case agent.StatusStepLimit:
		return tasks.StatusStepLimit
	case agent.StatusTimeLimit:
		return tasks.StatusTimeLimit
	case agent.StatusBudgetExhausted:
		return tasks.StatusBudgetExhausted
	case agent.StatusModelError:
		return tasks.StatusModelError
	case agent.StatusSandboxError:
		return tasks.StatusSandboxError
	case agent.StatusInterrupted:
		return tasks.StatusInterrupted
	}
	return tasks.StatusError
}

func envList(env map[string]string) []string {
	var out []string
	for k, v := range env {
		out = append(out, k+"="+v)
	}
	return out
}

func firstLine(s string) string {
	line, _, _ := strings.Cut(strings.TrimSpace(s), "\n")
	return line
}
