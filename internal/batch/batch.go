// Package batch runs a queue of tasks: for each, a clone, a sandbox, the
// agent, the check, and a commit on a new branch, N tasks at once, with a
// result recorded for each and a rerun resuming where a run stopped.
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

	"golang.org/x/sync/errgroup"

	"github.com/runner-dev/runner/agent"
	"github.com/runner-dev/runner/budget"
	"github.com/runner-dev/runner/gitops"
	"github.com/runner-dev/runner/internal/policy"
	"github.com/runner-dev/runner/internal/redact"
	"github.com/runner-dev/runner/sandbox"
	"github.com/runner-dev/runner/tasks"
)

// Defaults apply to every task field its file left unset.
type Defaults struct {
	Model        string
	Provider     string
	Image        string
	Runtime      string
	BudgetUSD    float64
	MaxSteps     int
	Timeout      time.Duration
	CheckTimeout time.Duration
}

// Options shape a run.
type Options struct {
	// Concurrency is how many tasks run at once; default 1.
	Concurrency int
	// RunBudgetUSD caps the whole run; 0 is no run-wide cap.
	RunBudgetUSD float64
	// Force lets a task move a branch that already exists.
	Force bool
	// RunID labels the run's sandboxes; default a time-based id.
	RunID string
	// Margin is how much longer than its timeout a task may take in all,
	// for the check, the snapshot and the commit; default 15m. When it
	// passes the task ends as time_limit, and its work so far is still
	// committed within a grace period.
	Margin   time.Duration
	Defaults Defaults
	// Agent holds settings passed to every agent (context window,
	// compaction); its Model, Price, Meter, MaxSteps, TimeLimit, Network,
	// Policy, Ask and Trajectory are set per task.
	Agent agent.Config
	// Policy adds to every task's policy: its protected paths and deny
	// rules are added to the task's, its hook applies to tasks with none.
	Policy policy.Policy
	// EnvironmentCacheLimit bounds the cache of prepared environments
	// (see sandbox.Setup.CacheLimit).
	EnvironmentCacheLimit int64
}

// Deps are what a run needs from the outside world.
type Deps struct {
	// Store is the out directory's store, opened (and locked) by the caller.
	Store *tasks.Store
	// StartSandbox starts a sandbox (a sandbox.Backend's Start).
	StartSandbox func(ctx context.Context, cfg sandbox.Config) (sandbox.Sandbox, error)
	// BuildImage builds a task's image from its repository (a
	// sandbox.ContextBuilder's BuildContext); nil where the backend
	// cannot.
	BuildImage func(ctx context.Context, opt sandbox.ContextBuildOptions) (sandbox.BuiltImage, error)
	// Environments runs the setup of tasks that have one; nil when the
	// backend cannot (such tasks then end as sandbox_error).
	Environments sandbox.Environments
	// ImageExists checks an image before anything runs.
	ImageExists func(ctx context.Context, image string) (bool, error)
	// NewModel makes the model of a task (its Model and Provider, defaults
	// applied); retries it reports go to the trajectory.
	NewModel func(t tasks.Task, traj *agent.Trajectory) (agent.Model, error)
	// Prices price the models; a model without a price is refused when
	// there is a budget.
	Prices budget.PriceTable
	// GitAuth authenticates clones and pushes of remote repositories.
	GitAuth gitops.Credentials
	// Secrets are redacted from trajectories (API keys, tokens).
	Secrets []string
	// Getenv reads the host's environment for the variables a task's MCP
	// servers are given; nil means os.Getenv.
	Getenv func(string) string
	// Ask answers the agent's questions; nil runs unattended.
	Ask func(ctx context.Context, question string) (string, error)
	// Approve is asked before each command and file change runs (see
	// agent.Config.Approve); nil runs them unasked.
	Approve func(ctx context.Context, req agent.ApprovalRequest) (agent.Approval, error)
	// Progress hears about tasks starting and ending; may be nil.
	Progress Progress
	// WorkDir holds the clones; default the system's temporary directory.
	WorkDir string
	// Endpoint is the gate of the model endpoint that NewModel's models
	// share; nil when there is none to watch. Before any task starts, it
	// is probed if a task will call it: an endpoint that refuses the key
	// or does not answer is a configuration error. During the run no task
	// that calls it starts while it is down, and the time its calls are
	// held does not count against a task's timeout, up to its OutageWait.
	Endpoint *agent.Endpoint
}

// Progress is told about the tasks of a run as they go. One that also
// implements PhaseProgress follows each running task step by step.
type Progress interface {
	Skipped(t tasks.Task, previous tasks.Result)
	Started(t tasks.Task, attempt int)
	Finished(t tasks.Task, r tasks.Result)
}

// Summary is the account of a run.
type Summary struct {
	// Results has one entry per task of the queue, in queue order: the
	// result of this run, or the earlier one for a task that was skipped.
	Results []tasks.Result
	Skipped int
	Spend   budget.Summary
	// Unrecorded lists the tasks whose result could not be written to the
	// out directory (a full disk, say); a rerun runs them again.
	Unrecorded []string `json:"unrecorded,omitempty"`
}

// Failed counts results other than succeeded.
func (s Summary) Failed() int {
	n := 0
	for _, r := range s.Results {
		if r.Status != tasks.StatusSucceeded {
			n++
		}
	}
	return n
}

// ErrConfig marks a problem found before anything ran.
var ErrConfig = errors.New("configuration error")

// Run runs the queue. It returns an error wrapping ErrConfig when a task
// cannot run as configured (a missing price, image or model; an existing
// branch; a model endpoint that refuses the key or does not answer) — found
// before any task starts. Otherwise every task gets a result, and the error
// is nil even when tasks failed. When ctx is cancelled no new task starts
// and running ones end as interrupted. While the endpoint is down no task
// that calls it starts; if it stays down longer than its OutageWait, those
// tasks end as model_error without starting (and without a record, so that
// a rerun runs them).
func Run(ctx context.Context, queue []tasks.Task, opt Options, deps Deps) (Summary, error) {
	if opt.Concurrency <= 0 {
		opt.Concurrency = 1
	}
	if opt.RunID == "" {
		opt.RunID = time.Now().UTC().Format("20060102-150405")
	}
	run, err := budget.NewMeter(opt.RunBudgetUSD, nil)
	if err != nil {
		return Summary{}, fmt.Errorf("%w: run budget: %w", ErrConfig, err)
	}
	plans, err := plan(ctx, queue, opt, deps)
	if err != nil {
		return Summary{}, err
	}
	if err := preflight(ctx, plans, deps.Endpoint); err != nil {
		return Summary{}, err
	}
	opt.Agent.MaxHeldTime = deps.Endpoint.OutageWait()
	if err := os.MkdirAll(filepath.Join(deps.Store.Dir(), "trajectories"), 0o755); err != nil {
		return Summary{}, fmt.Errorf("create trajectories directory: %w", err)
	}

	sum := Summary{Results: make([]tasks.Result, len(queue))}
	var mu sync.Mutex
	g := new(errgroup.Group)
	g.SetLimit(opt.Concurrency)
	var bestOf sync.WaitGroup // the tasks whose attempts run in g
	for i, p := range plans {
		if p.skip != nil {
			sum.Results[i] = *p.skip
			sum.Skipped++
			if deps.Progress != nil {
				deps.Progress.Skipped(p.task, *p.skip)
			}
			continue
		}
		if ctx.Err() != nil {
			sum.Results[i] = notStarted(p.task, ctx.Err())
			continue
		}
		if p.task.BestOf() {
			runBestOf(ctx, g, &bestOf, p, run, opt, deps, func(r tasks.Result, recErr error) {
				mu.Lock()
				sum.Results[i] = r
				if recErr != nil {
					sum.Unrecorded = append(sum.Unrecorded, p.task.ID)
				}
				mu.Unlock()
			})
			continue
		}
		g.Go(func() error {
			// Stopped while this task waited for a slot, or for the
			// endpoint to answer again?
			err := ctx.Err()
			if err == nil && callsEndpoint(p.task) {
				err = deps.Endpoint.Ready(ctx)
			}
			if err != nil {
				mu.Lock()
				sum.Results[i] = notStarted(p.task, err)
				mu.Unlock()
				return nil
			}
			r, recErr := runTask(ctx, p, run, opt, deps)
			mu.Lock()
			sum.Results[i] = r
			if recErr != nil {
				sum.Unrecorded = append(sum.Unrecorded, p.task.ID)
			}
			mu.Unlock()
			return nil
		})
	}
	g.Wait()
	bestOf.Wait()
	sum.Spend = run.Summary()
	return sum, nil
}

// preflight probes the endpoint, once, when a task that will run calls it.
func preflight(ctx context.Context, plans []taskPlan, endpoint *agent.Endpoint) error {
	for _, p := range plans {
		if p.skip == nil && callsEndpoint(p.task) {
			err := endpoint.Check(ctx)
			switch {
			case ctx.Err() != nil:
				return ctx.Err()
			case err != nil:
				return fmt.Errorf("%w: %w", ErrConfig, err)
			}
			return nil
		}
	}
	return nil
}

// callsEndpoint tells whether a task's model is served by the endpoint: a
// replay plays a recorded trajectory back instead.
func callsEndpoint(t tasks.Task) bool { return !strings.HasPrefix(t.Model, "replay:") }

// notStarted is the result of a task that did not start because the run
// was stopped, or because the endpoint stayed unavailable. It is not
// recorded: a rerun runs the task.
func notStarted(t tasks.Task, why error) tasks.Result {
	r := tasks.Result{ID: t.ID, Status: tasks.StatusInterrupted, Repo: redact.URL(t.Repo),
		Error: "the run was stopped before this task started"}
	if errors.Is(why, agent.ErrOutage) {
		r.Status, r.Error = tasks.StatusModelError, "not started: "+why.Error()
	}
	return r
}

// taskDeadline bounds a task from clone to commit: its timeout, the margin
// left for the check and the commit, and the time its model calls may be
// held by the endpoint gate (which the agent's own clock does not count).
func taskDeadline(t tasks.Task, opt Options) time.Duration {
	d := t.Timeout + opt.margin() + t.Setup.Timeout // no setup: 0
	if t.Setup.Timeout == 0 && t.Build != nil && t.Build.Devcontainer {
		d += tasks.DefaultSetupTimeout // its lifecycle commands may run as setup
	}
	if callsEndpoint(t) {
		d += opt.Agent.MaxHeldTime
	}
	return d
}

// sandboxLifetime bounds a task's sandbox: the task's deadline, and the
// grace a task whose deadline passed gets to commit its work.
func sandboxLifetime(t tasks.Task, opt Options) time.Duration {
	return taskDeadline(t, opt) + commitGrace
}

// taskPlan is a task with everything resolved before the run starts.
type taskPlan struct {
	task  tasks.Task
	price budget.Price
	skip  *tasks.Result // set when an earlier run finished the task
	cont  *continuation // set when the task goes on from an earlier attempt
	try   *tryPlan      // set for one attempt of a best-of-n task
}

// plan applies the defaults and checks every task that will run: its
// model has a price if it has a budget, its image exists, and its branch
// is free. All problems are reported at once.
func plan(ctx context.Context, queue []tasks.Task, opt Options, deps Deps) ([]taskPlan, error) {
	finished := deps.Store.Finished()
	var problems []string
	images := map[string]bool{}
	plans := make([]taskPlan, len(queue))
	for i, t := range queue {
		t = withDefaults(t, opt.Defaults)
		t.Policy = withPolicy(t.Policy, opt.Policy)
		plans[i].task = t
		if r, ok := finished[t.ID]; ok {
			plans[i].skip = &r
			continue
		}
		where := fmt.Sprintf("task %q", t.ID)
		if t.Source.File != "" {
			where = fmt.Sprintf("%s:%d: task %q", t.Source.File, t.Source.Line, t.ID)
		}
		if t.Model == "" {
			problems = append(problems, where+": no model: set model in the task file, or --model / RUNNER_MODEL")
			continue
		}
		if !strings.HasPrefix(t.Model, "replay:") {
			p, err := deps.Prices.Resolve(t.Model, t.BudgetUSD > 0 || opt.RunBudgetUSD > 0)
			if err != nil {
				problems = append(problems, where+": "+err.Error())
			}
			plans[i].price = p
		}
		if t.Build == nil { // a build's base images are checked by the build
			images[t.Image] = true
		}
		if !tasks.IsRemote(t.Repo) && !opt.Force {
			if msg := branchTaken(t, deps.Store); msg != "" {
				problems = append(problems, where+": "+msg)
			}
		}
		problems = append(problems, bestOfProblems(t, where, opt, deps)...)
	}
	for image := range images {
		ok, err := deps.ImageExists(ctx, image)
		switch {
		case err != nil:
			return nil, fmt.Errorf("%w: %w", ErrConfig, err)
		case !ok:
			problems = append(problems, (&sandbox.ImageError{Image: image}).Error())
		}
	}
	if len(problems) > 0 {
		return nil, &ConfigError{Problems: problems}
	}
	return plans, nil
}

// branchTaken explains why a task's branch cannot be written, or "".
// A branch left by an interrupted attempt of the same task is not taken:
// the task will replace it.
func branchTaken(t tasks.Task, store *tasks.Store) string {
	_, msg, found, err := gitops.BranchHead(t.Repo, t.Branch)
	switch {
	case err != nil:
		return err.Error()
	case !found:
		return ""
	case leftByEarlierAttempt(t, msg, store):
		return ""
	}
	return fmt.Sprintf("branch %s already exists in %s; delete it (runner rollback), choose another branch, or pass --force", t.Branch, t.Repo)
}

// leftByEarlierAttempt recognises a commit this out directory's earlier,
// interrupted attempt made for the same task.
func leftByEarlierAttempt(t tasks.Task, message string, store *tasks.Store) bool {
	interrupted := false
	for _, id := range store.Interrupted() {
		interrupted = interrupted || id == t.ID
	}
	return interrupted && madeForTask(message, t.ID)
}

func withDefaults(t tasks.Task, d Defaults) tasks.Task {
	if t.Model == "" {
		t.Model = d.Model
	}
	if t.Provider == "" {
		t.Provider = d.Provider
	}
	t = withDefaultImage(t, d.Image)
	if t.Runtime == "" {
		t.Runtime = d.Runtime
	}
	if t.BudgetUSD == 0 {
		t.BudgetUSD = d.BudgetUSD
	}
	if t.MaxSteps == 0 {
		t.MaxSteps = d.MaxSteps
	}
	if t.Timeout == 0 {
		t.Timeout = d.Timeout
	}
	if t.Timeout == 0 {
		t.Timeout = 30 * time.Minute
	}
	if t.CheckTimeout == 0 {
		t.CheckTimeout = d.CheckTimeout
	}
	if t.CheckTimeout == 0 {
		t.CheckTimeout = 10 * time.Minute
	}
	if t.Branch == "" {
		t.Branch = "agent/" + t.ID
	}
	if !tasks.IsRemote(t.Repo) {
		// Results and rollback must find the repository from anywhere.
		if abs, err := filepath.Abs(t.Repo); err == nil {
			t.Repo = abs
		}
	}
	return t
}

// getenv is Deps.Getenv, or os.Getenv.
func (d Deps) getenv(name string) string {
	if d.Getenv != nil {
		return d.Getenv(name)
	}
	return os.Getenv(name)
}
