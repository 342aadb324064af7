package report

import (
	"cmp"
	"context"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/runner-dev/runner/gitops"
	"github.com/runner-dev/runner/tasks"
)

// StatusCount is how many tasks stand at a status.
type StatusCount struct {
	Status string
	N      int
	Good   bool
}

// Summary is the account of a run that heads the report.
type Summary struct {
	Tasks int
	// Counts are per status of the tasks' latest attempts, then running,
	// queued and not run; statuses with no task are left out.
	Counts            []StatusCount
	Succeeded, Failed int
	Running, Queued   int
	// SpentUSD adds up every attempt in the out directory; RunSpentUSD the
	// attempts of the latest run, whose budget is RunBudgetUSD (0: none).
	SpentUSD, RunSpentUSD, RunBudgetUSD float64
	Tokens                              tasks.Tokens
	Calls                               int
	// Wall is the latest run's wall time, to its end or to now.
	Wall time.Duration
	// Slowest and Costliest are the first few tasks by the duration of
	// their latest attempt and by what all their attempts cost.
	Slowest, Costliest []*Task
}

// CachedShare is the part of the prompt tokens served from the cache.
func (s Summary) CachedShare() float64 {
	if s.Tokens.In == 0 {
		return 0
	}
	return float64(s.Tokens.Cached) / float64(s.Tokens.In)
}

// BudgetShare is the part of the run budget the latest run spent.
func (s Summary) BudgetShare() float64 {
	if s.RunBudgetUSD <= 0 {
		return 0
	}
	return s.RunSpentUSD / s.RunBudgetUSD
}

// statusOrder lists the statuses as the report shows them.
var statusOrder = []string{
	string(tasks.StatusSucceeded), string(tasks.StatusCheckFailed), string(tasks.StatusBudgetExhausted),
	string(tasks.StatusStepLimit), string(tasks.StatusTimeLimit), string(tasks.StatusPolicyViolation),
	string(tasks.StatusSetupFailed), string(tasks.StatusModelError), string(tasks.StatusSandboxError), string(tasks.StatusError),
	string(tasks.StatusInterrupted), string(StateRunning), string(StateQueued), string(StateNotRun),
}

// Cost is what all the task's attempts cost.
func (t *Task) Cost() float64 {
	sum := 0.0
	for _, r := range t.Attempts {
		sum += r.CostUSD
	}
	return sum
}

// Summarize accounts for the run.
func (r *Run) Summarize() Summary {
	s := Summary{Tasks: len(r.Tasks)}
	counts := map[string]int{}
	var since, first, last time.Time
	if r.Meta != nil {
		since = r.Meta.StartedAt
		s.RunBudgetUSD = r.Meta.RunBudgetUSD
	}
	var finished []*Task
	for _, t := range r.Tasks {
		counts[t.Status()]++
		switch {
		case t.State == StateRunning:
			s.Running++
		case t.State == StateQueued:
			s.Queued++
		case t.State == StateFinished && t.Latest().Status == tasks.StatusSucceeded:
			s.Succeeded++
		case t.State == StateFinished:
			s.Failed++
		}
		if t.State == StateFinished {
			finished = append(finished, t)
		}
		for _, a := range t.Attempts {
			s.SpentUSD += a.CostUSD
			s.Tokens.In += a.Tokens.In
			s.Tokens.Cached += a.Tokens.Cached
			s.Tokens.Out += a.Tokens.Out
			s.Calls += a.Calls
			if !a.StartedAt.Before(since) {
				s.RunSpentUSD += a.CostUSD
			}
			if first.IsZero() || a.StartedAt.Before(first) {
				first = a.StartedAt
			}
			if a.FinishedAt.After(last) {
				last = a.FinishedAt
			}
		}
		if t.Live != nil {
			s.RunSpentUSD += t.Live.SpentUSD
			s.SpentUSD += t.Live.SpentUSD
		}
	}
	for _, st := range statusOrder {
		if n := counts[st]; n > 0 {
			s.Counts = append(s.Counts, StatusCount{Status: st, N: n, Good: st == string(tasks.StatusSucceeded)})
		}
	}
	switch {
	case r.Meta != nil && !r.Meta.FinishedAt.IsZero():
		s.Wall = r.Meta.FinishedAt.Sub(r.Meta.StartedAt)
	case r.Meta != nil:
		s.Wall = r.Now.Sub(r.Meta.StartedAt)
	case !first.IsZero():
		s.Wall = last.Sub(first)
	}
	s.Slowest = top(finished, func(t *Task) float64 { return float64(t.Latest().Duration) })
	s.Costliest = top(finished, (*Task).Cost)
	return s
}

// top returns the first five tasks by key, largest first, ties in order.
func top(ts []*Task, key func(*Task) float64) []*Task {
	sorted := slices.Clone(ts)
	slices.SortStableFunc(sorted, func(a, b *Task) int { return cmp.Compare(key(b), key(a)) })
	var out []*Task
	for _, t := range sorted {
		if len(out) == 5 || key(t) <= 0 {
			break
		}
		out = append(out, t)
	}
	return out
}

// Row is a task as the index's table shows it: the JSON the page's
// script renders, filters and sorts.
type Row struct {
	ID      string  `json:"id"`
	Status  string  `json:"status"`
	Repo    string  `json:"repo"`
	CostUSD float64 `json:"cost"`
	// BudgetUSD and Share are the latest attempt's cap and the share of
	// it spent (tasks.Result.BudgetUSD, BudgetShare); 0 without a cap.
	BudgetUSD float64 `json:"budget,omitempty"`
	Share     float64 `json:"share"`
	Steps     int     `json:"steps"`
	Seconds   float64 `json:"seconds"`
	Attempts  int     `json:"attempts"`
	Branch    string  `json:"branch,omitempty"`
	// Why is the first line of the error, or of the summary, shortened.
	Why string `json:"why,omitempty"`
	// Page is the task's page, relative to the index; empty when it has
	// none yet.
	Page string `json:"page,omitempty"`
}

// maxWhy is how much of an error or summary the index shows.
const maxWhy = 160

// Rows returns the index's rows, in the order of r.Tasks.
func (r *Run) Rows() []Row {
	rows := make([]Row, 0, len(r.Tasks))
	for _, t := range r.Tasks {
		l := t.Latest()
		row := Row{ID: t.ID, Status: t.Status(), Repo: l.Repo, CostUSD: t.Cost(), Steps: l.Steps,
			Seconds: time.Duration(l.Duration).Seconds(), Attempts: len(t.Attempts), Branch: l.Branch,
			Why: why(l), BudgetUSD: l.BudgetUSD, Share: l.BudgetShare}
		if t.State == StateFinished {
			row.Page = PagePath(t.ID)
		}
		if t.Live != nil {
			row.Why = t.Live.Phase
			if t.Live.Step > 0 {
				row.Why += " " + strconv.Itoa(t.Live.Step)
			}
			row.CostUSD += t.Live.SpentUSD
			row.Steps = t.Live.Step
		}
		rows = append(rows, row)
	}
	return rows
}

// why is the one line the index shows of an attempt.
func why(r tasks.Result) string {
	text := r.Error
	if text == "" {
		text = r.Summary
	}
	line, _, _ := strings.Cut(strings.TrimSpace(text), "\n")
	return clip(line, maxWhy).Text
}

// PagePath is the page of task id, relative to the report's directory.
// Task ids are file-name safe (tasks.CheckID).
func PagePath(id string) string { return "tasks/" + id + ".html" }

// Attempt is one attempt of a task with what its page shows: the diff of
// its commit and its trajectory as a timeline.
type Attempt struct {
	tasks.Result
	Diff          *gitops.CommitDiff
	DiffError     string
	Timeline      *Timeline
	TimelineError string
	// Chosen marks the attempt of a best-of-n task kept on its branch.
	Chosen bool
}

// Explain says in a sentence what the attempt's status means.
func (a *Attempt) Explain() string { return explain(a.Result) }

func explain(r tasks.Result) string {
	switch r.Status {
	case tasks.StatusSucceeded:
		return "The agent completed the task and the check, if any, passed."
	case tasks.StatusCheckFailed:
		return "The agent completed, but the check still failed after the last retry."
	case tasks.StatusBudgetExhausted:
		return "The budget ran out before the agent completed."
	case tasks.StatusStepLimit:
		return "The agent used all its steps without completing."
	case tasks.StatusTimeLimit:
		return "The task's time ran out."
	case tasks.StatusModelError:
		return "The model endpoint failed beyond its retries."
	case tasks.StatusSandboxError:
		return "The container engine failed."
	case tasks.StatusPolicyViolation:
		return "The work changed a protected path, so it was not committed."
	case tasks.StatusInterrupted:
		return "The run was stopped before the task ended."
	case tasks.StatusSetupFailed:
		return "The task's setup failed; the agent did not run."
	case tasks.StatusCancelled:
		return "Another attempt of the task passed first and stopped this one; its work so far is on its attempt branch."
	}
	return "The task failed."
}

// ReadAttempt reads the diff and the timeline of attempt r of the out
// directory out. What cannot be read is said in DiffError and
// TimelineError.
func ReadAttempt(ctx context.Context, out string, r tasks.Result, lim gitops.DiffLimits) *Attempt {
	a := &Attempt{Result: r}
	switch {
	case r.Commit == "":
	case tasks.IsRemote(r.Repo):
		a.DiffError = "the branch was committed in a clone of the remote repository; fetch " + r.Branch + " to see its diff"
	default:
		d, err := gitops.Diff(ctx, r.Repo, r.Commit, lim)
		if err != nil {
			a.DiffError = err.Error()
		}
		a.Diff = d
	}
	tl, err := ReadTimeline(filepath.Join(out, "trajectories", tasks.TrajectoryName(r.ID, r.Attempt, r.Try)))
	if err != nil {
		a.TimelineError = err.Error()
	}
	a.Timeline = tl
	return a
}
