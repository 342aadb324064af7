package batch

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/go-git/go-git/v5/plumbing"

	"github.com/runner-dev/runner/agent"
	"github.com/runner-dev/runner/budget"
	"github.com/runner-dev/runner/gitops"
	"github.com/runner-dev/runner/sandbox"
	"github.com/runner-dev/runner/tasks"
)

// ErrCannotContinue marks a task that Continue refuses to continue: it
// succeeded, ended otherwise than by running out, is unknown, or what it
// left (its definition, trajectory or branch) cannot be gone on from.
// Nothing was started.
var ErrCannotContinue = errors.New("cannot continue")

// ContinueOptions say how a task goes on.
type ContinueOptions struct {
	// ID is the task.
	ID string
	// BudgetUSD caps what the continuation spends, on its own: what the
	// earlier attempts spent does not count. 0 means the task's own cap
	// again (none if it had none).
	BudgetUSD float64
	// MaxSteps caps the continuation's model calls; 0 means the task's.
	MaxSteps int
	// Prompt is more guidance for the agent, added to the message that
	// tells it to go on.
	Prompt string
}

// continuation is what a continued attempt goes on from.
type continuation struct {
	from    tasks.Result // the result that stands for the task
	history agent.History
	prompt  string
}

// Continuable reports whether a task that ended with status s may be
// continued: it ran out of budget, steps or time, or its check failed.
func Continuable(s tasks.Status) bool {
	switch s {
	case tasks.StatusBudgetExhausted, tasks.StatusStepLimit, tasks.StatusTimeLimit, tasks.StatusCheckFailed:
		return true
	}
	return false
}

// Continue runs a new attempt of a task of the out directory that ran out
// (see Continuable): a sandbox with the task's branch as the earlier
// attempt left it (its base, if it committed nothing), the agent's history
// rebuilt from the trajectories (see agent.ReadHistory) and new limits.
// The attempt is recorded in results.jsonl (Result.Continues names the
// attempt it went on from), and its work is committed on the same branch,
// moved forward from the earlier commit; a branch moved since (someone
// committed to it) is refused before anything starts, and again under the
// branch's lock when committing. For a remote repository the branch is the
// remote's (see remoteBranchMoved), and the push, a fast-forward only, is
// where a branch moved meanwhile is refused.
//
// A refusal is an error wrapping ErrCannotContinue that names the task
// and the file at fault; a configuration problem (a price, an image, the
// endpoint) wraps ErrConfig. Otherwise the result is returned with a nil
// error, whatever its status. opt.Defaults, Concurrency, RunBudgetUSD and
// Force do not apply.
func Continue(ctx context.Context, copt ContinueOptions, opt Options, deps Deps) (tasks.Result, error) {
	p, err := planContinuation(copt, deps)
	if err != nil {
		return tasks.Result{}, err
	}
	if tasks.IsRemote(p.task.Repo) {
		if msg := remoteBranchMoved(ctx, p.task, p.cont.from, deps.GitAuth); msg != "" {
			return tasks.Result{}, fmt.Errorf("%w: task %s: %s", ErrCannotContinue, p.task.ID, msg)
		}
	}
	if !strings.HasPrefix(p.task.Model, "replay:") {
		if p.price, err = deps.Prices.Resolve(p.task.Model, p.task.BudgetUSD > 0); err != nil {
			return tasks.Result{}, fmt.Errorf("%w: task %s: %w", ErrConfig, p.task.ID, err)
		}
	}
	if p.task.Build == nil { // an image from the repository is built again from the clone
		switch ok, err := deps.ImageExists(ctx, p.task.Image); {
		case err != nil:
			return tasks.Result{}, fmt.Errorf("%w: %w", ErrConfig, err)
		case !ok:
			return tasks.Result{}, &ConfigError{Problems: []string{(&sandbox.ImageError{Image: p.task.Image}).Error()}}
		}
	}
	if err := preflight(ctx, []taskPlan{p}, deps.Endpoint); err != nil {
		return tasks.Result{}, err
	}
	opt.Agent.MaxHeldTime = deps.Endpoint.OutageWait()
	if err := os.MkdirAll(filepath.Join(deps.Store.Dir(), "trajectories"), 0o755); err != nil {
		return tasks.Result{}, fmt.Errorf("create trajectories directory: %w", err)
	}
	if err := ctx.Err(); err != nil {
		return notStarted(p.task, err), err
	}
	if callsEndpoint(p.task) {
		if err := deps.Endpoint.Ready(ctx); err != nil {
			return notStarted(p.task, err), err
		}
	}
	run, _ := budget.NewMeter(0, nil)
	res, recErr := runTask(ctx, p, run, opt, deps)
	if recErr != nil {
		return res, fmt.Errorf("the result of %s could not be written to %s: %w", p.task.ID, deps.Store.Dir(), recErr)
	}
	return res, nil
}

// planContinuation checks that the task can go on and gathers what it
// goes on from.
func planContinuation(copt ContinueOptions, deps Deps) (taskPlan, error) {
	id, store := copt.ID, deps.Store
	results := filepath.Join(store.Dir(), tasks.ResultsFile)
	refuse := func(format string, args ...any) (taskPlan, error) {
		return taskPlan{}, fmt.Errorf("%w: task %s: %s", ErrCannotContinue, id, fmt.Sprintf(format, args...))
	}
	if err := tasks.CheckID(id); err != nil {
		return taskPlan{}, fmt.Errorf("%w: %w", ErrCannotContinue, err)
	}
	from, ok := store.Current(id)
	switch {
	case !ok:
		return refuse("it has no result in %s", results)
	case from.BestOf > 1:
		return refuse("it ran as %d attempts (attempt %d in %s); runner continue goes on from a task run once: review its attempt branches, or run it again",
			from.BestOf, from.Attempt, results)
	case from.Status == tasks.StatusSucceeded:
		return refuse("it succeeded (attempt %d in %s); there is nothing to continue", from.Attempt, results)
	case !Continuable(from.Status):
		return refuse("its attempt %d ended %s (see %s); only a task that ended budget_exhausted, step_limit, time_limit or check_failed can be continued",
			from.Attempt, from.Status, results)
	}
	t, err := store.LoadDefinition(id)
	if err != nil {
		return taskPlan{}, fmt.Errorf("%w: %w", ErrCannotContinue, err)
	}
	if copt.BudgetUSD > 0 {
		t.BudgetUSD = copt.BudgetUSD
	}
	if copt.MaxSteps > 0 {
		t.MaxSteps = copt.MaxSteps
	}
	if from.Commit != "" && from.Branch != t.Branch {
		return refuse("attempt %d committed to branch %s, but its definition names branch %s", from.Attempt, from.Branch, t.Branch)
	}
	if tasks.IsRemote(t.Repo) {
		if msg := unpushed(t, from); msg != "" {
			return refuse("%s", msg)
		}
	} else if msg := branchMoved(t, from); msg != "" {
		return refuse("%s", msg)
	}
	history, err := readHistory(store.Dir(), from, store, deps.Secrets)
	if err != nil {
		return taskPlan{}, fmt.Errorf("%w: task %s: %w", ErrCannotContinue, id, err)
	}
	return taskPlan{task: t, cont: &continuation{from: from, history: history, prompt: continuePrompt(t, from, copt.Prompt)}}, nil
}

// branchMoved explains why the task's branch is not where attempt from
// left it, or "".
func branchMoved(t tasks.Task, from tasks.Result) string {
	head, _, found, err := gitops.BranchHead(t.Repo, t.Branch)
	switch {
	case err != nil:
		return err.Error()
	case from.Commit == "" && found:
		return fmt.Sprintf("attempt %d committed nothing, but branch %s now exists in %s (at %s); delete it (git branch -D %s) to continue from the task's base",
			from.Attempt, t.Branch, t.Repo, head, t.Branch)
	case from.Commit != "" && !found:
		return fmt.Sprintf("branch %s, where attempt %d committed %s, no longer exists in %s", t.Branch, from.Attempt, from.Commit, t.Repo)
	case from.Commit != "" && head.String() != from.Commit:
		return fmt.Sprintf("branch %s moved since attempt %d committed %s to it (it is now at %s, in %s): a continuation would not build on what is there; "+
			"reset the branch to %s, or continue that work yourself", t.Branch, from.Attempt, from.Commit, head, t.Repo, from.Commit)
	}
	return ""
}

// readHistory rebuilds the agent's history from the trajectories of the
// attempts that led to from, oldest first.
func readHistory(out string, from tasks.Result, store *tasks.Store, secrets []string) (agent.History, error) {
	var chain []tasks.Result
	for r, ok := from, true; ok; {
		chain = append([]tasks.Result{r}, chain...)
		if r.Continues == 0 {
			break
		}
		prev := r.Continues
		if prev >= r.Attempt {
			return agent.History{}, fmt.Errorf("attempt %d continues attempt %d, a later one, in %s",
				r.Attempt, prev, filepath.Join(out, tasks.ResultsFile))
		}
		if r, ok = attemptOf(store, from.ID, prev); !ok {
			return agent.History{}, fmt.Errorf("attempt %d, which attempt %d continued, has no result in %s",
				prev, chain[0].Attempt, filepath.Join(out, tasks.ResultsFile))
		}
	}
	var sources []agent.HistorySource
	for _, r := range chain {
		path := TrajectoryPath(out, r.ID, r.Attempt)
		f, err := os.Open(path)
		if errors.Is(err, os.ErrNotExist) {
			return agent.History{}, fmt.Errorf("the trajectory of attempt %d, %s, is missing", r.Attempt, path)
		}
		if err != nil {
			return agent.History{}, fmt.Errorf("read trajectory: %w", err)
		}
		defer f.Close()
		sources = append(sources, agent.HistorySource{Name: path, R: f})
	}
	return agent.ReadHistory(secrets, sources...)
}

func attemptOf(store *tasks.Store, id string, attempt int) (tasks.Result, bool) {
	for _, r := range store.Results() {
		if r.ID == id && r.Attempt == attempt {
			return r, true
		}
	}
	return tasks.Result{}, false
}

// TrajectoryPath is where the trajectory of one attempt of a task is kept
// in the out directory.
func TrajectoryPath(out, id string, attempt int) string {
	return filepath.Join(out, "trajectories", tasks.TrajectoryName(id, attempt, 0))
}

// continuePrompt tells the agent why it stopped and to go on.
func continuePrompt(t tasks.Task, from tasks.Result, guidance string) string {
	why := map[tasks.Status]string{
		tasks.StatusBudgetExhausted: "its budget ran out",
		tasks.StatusStepLimit:       "it used all its steps",
		tasks.StatusTimeLimit:       "its time ran out",
		tasks.StatusCheckFailed:     fmt.Sprintf("the check `%s` still failed (%s)", t.Check, strings.TrimSpace(from.Error)),
	}[from.Status]
	var b strings.Builder
	fmt.Fprintf(&b, "Your work on this task stopped before it was done: %s. ", why)
	b.WriteString("The workspace holds your work as it was when you stopped. " +
		"Continue the task from there, verify it, then call complete.")
	if g := strings.TrimSpace(guidance); g != "" {
		b.WriteString("\n\nGuidance for going on:\n\n" + g)
	}
	return b.String()
}

// base is the commit a continuation starts from: the earlier
// attempt's commit, or the task's base if it committed nothing.
func (c *continuation) base() string {
	if c.from.Commit != "" {
		return c.from.Commit
	}
	return c.from.Base
}

// expect is where the task's branch must be for the continuation's commit.
func (c *continuation) expect() plumbing.Hash {
	if c.from.Commit == "" {
		return plumbing.ZeroHash
	}
	return plumbing.NewHash(c.from.Commit)
}
