package tasks

import (
	"encoding/json"
	"fmt"
	"time"
)

// Status is how a task ended.
type Status string

// The statuses of a result.
const (
	// StatusSucceeded: the agent finished and the check, if any, passed.
	StatusSucceeded Status = "succeeded"
	// StatusCheckFailed: the check still failed after the last retry.
	StatusCheckFailed Status = "check_failed"
	// StatusBudgetExhausted: the task or run budget ran out.
	StatusBudgetExhausted Status = "budget_exhausted"
	// StatusStepLimit: the agent used all its steps.
	StatusStepLimit Status = "step_limit"
	// StatusTimeLimit: the task's timeout passed.
	StatusTimeLimit Status = "time_limit"
	// StatusModelError: the model endpoint failed beyond its retries.
	StatusModelError Status = "model_error"
	// StatusSandboxError: the container engine failed.
	StatusSandboxError Status = "sandbox_error"
	// StatusPolicyViolation: the work changed a protected path (through a
	// command: the file tools refuse them), so it was not committed.
	StatusPolicyViolation Status = "policy_violation"
	// StatusSetupFailed: the task's setup failed, timed out or left a
	// secret behind; the agent did not run and nothing was spent.
	StatusSetupFailed Status = "setup_failed"
	// StatusError: any other failure (clone, commit, push...).
	StatusError Status = "error"
	// StatusInterrupted: the run was stopped before the task ended. It is
	// the only status that is not final: a rerun runs the task again.
	StatusInterrupted Status = "interrupted"
	// StatusCancelled: an attempt of a best-of-n task stopped because
	// another attempt passed first (stop_on_success); its work so far is
	// committed on its attempt branch.
	StatusCancelled Status = "cancelled"
)

var statuses = map[Status]bool{
	StatusSucceeded: true, StatusCheckFailed: true, StatusBudgetExhausted: true,
	StatusStepLimit: true, StatusTimeLimit: true, StatusModelError: true,
	StatusSandboxError: true, StatusPolicyViolation: true, StatusError: true, StatusInterrupted: true,
	StatusSetupFailed: true,
	StatusCancelled:   true,
}

// Valid reports whether s is one of the statuses above.
func (s Status) Valid() bool { return statuses[s] }

// Final reports whether a result with this status ends the task for good,
// so that a rerun skips it.
func (s Status) Final() bool { return s.Valid() && s != StatusInterrupted }

// Tokens counts the tokens a task used.
type Tokens struct {
	// In counts prompt tokens, Cached included.
	In     int64 `json:"in"`
	Cached int64 `json:"cached"`
	Out    int64 `json:"out"`
}

// Result is the record of one attempt at a task: one line of results.jsonl.
type Result struct {
	ID      string `json:"id"`
	Attempt int    `json:"attempt"`
	// Continues is the attempt this one went on from (runner continue):
	// it started from that attempt's branch and history. 0 for an attempt
	// that started from the task's base.
	Continues int    `json:"continues,omitempty"`
	Status    Status `json:"status"`
	// Repo is redacted: it carries no credentials.
	Repo string `json:"repo"`
	Ref  string `json:"ref,omitempty"`
	// Base is the commit the task started from.
	Base string `json:"base,omitempty"`
	// Branch is the branch the task's commit is on; like Commit, it is
	// empty when nothing was committed (an error before the commit, a
	// refused or failed commit, no changes, an interrupted task).
	Branch string `json:"branch,omitempty"`
	// Commit is the head of Branch, empty when nothing was committed.
	Commit  string  `json:"commit,omitempty"`
	Pushed  bool    `json:"pushed"`
	CostUSD float64 `json:"cost_usd"`
	// BudgetUSD is the task's cap, the tightest over it (the task's own
	// or the run's), and BudgetShare the share of it spent, 0 to 1; both
	// are absent without a cap.
	BudgetUSD   float64 `json:"budget_usd,omitempty"`
	BudgetShare float64 `json:"budget_share,omitempty"`
	// OverrunUSD is what the task's model calls cost beyond what was
	// reserved for them: set only when the server reported more usage than
	// a call's bound, which ends the task as budget_exhausted.
	OverrunUSD float64   `json:"overrun_usd,omitempty"`
	Tokens     Tokens    `json:"tokens"`
	Calls      int       `json:"calls"`
	Steps      int       `json:"steps"`
	Duration   Duration  `json:"duration"`
	StartedAt  time.Time `json:"started_at"`
	FinishedAt time.Time `json:"finished_at"`
	Error      string    `json:"error,omitempty"`
	// Questions are the questions the agent asked and that nobody answered.
	Questions []string `json:"questions,omitempty"`
	Summary   string   `json:"summary,omitempty"`

	// Warnings say where the workspace or the commit differs from what
	// git would have made: attributes not applied, nested repositories and
	// submodule content left out (see gitops).
	Warnings []string `json:"warnings,omitempty"`

	// Excluded lists what the task's exclude list left out of the commit:
	// untracked paths the repository's own ignore rules would have
	// committed, a directory wholly left out as "dir/". At most
	// MaxExcludedListed entries are kept; ExcludedMore counts the others
	// and ExcludedFiles the files left out in all.
	Excluded      []string `json:"excluded,omitempty"`
	ExcludedMore  int      `json:"excluded_more,omitempty"`
	ExcludedFiles int      `json:"excluded_files,omitempty"`
	// RefusedHosts are the "host:port" the egress proxy refused, each once,
	// in the order first asked for (network: {allow: [...]} only); the
	// trajectory has every decision, with its reason.
	RefusedHosts []string `json:"refused_hosts,omitempty"`
	// Setup describes the task's setup phase, when it has one.
	Setup *SetupResult `json:"setup,omitempty"`

	// Best-of-n (attempts: N > 1; see AttemptResult). BestOf is N, on the
	// task's line and on each attempt's. Try is set on an attempt's line
	// only: its number, 1 to N (Attempt above counts the runs of the
	// task, not these); an attempt's line is written when it ends, before
	// the choice. On the task's line, written last, Kept is the number of
	// the attempt whose commit the task's branch got (0 when none passed)
	// and Tries sums up every attempt, the kept one marked chosen.
	BestOf int             `json:"best_of,omitempty"`
	Try    int             `json:"try,omitempty"`
	Kept   int             `json:"kept,omitempty"`
	Tries  []AttemptResult `json:"tries,omitempty"`
}

// AttemptResult is one attempt of a best-of-n task as its task's line
// sums it up; the attempt's own line has the rest.
type AttemptResult struct {
	Try     int     `json:"try"`
	Status  Status  `json:"status"`
	CostUSD float64 `json:"cost_usd"`
	// Branch and Commit are empty when the attempt committed nothing.
	Branch string `json:"branch,omitempty"`
	Commit string `json:"commit,omitempty"`
	Chosen bool   `json:"chosen,omitempty"`
	// Attempt is the run attempt whose line holds this attempt: an
	// earlier one when a rerun took over what a stopped run finished.
	Attempt int    `json:"attempt"`
	Error   string `json:"error,omitempty"`
}

// MaxExcludedListed caps Result.Excluded.
const MaxExcludedListed = 50

// SetExcluded records the paths the exclude list left out, capped at
// MaxExcludedListed entries, and the number of files they hold.
func (r *Result) SetExcluded(paths []string, files int) {
	r.Excluded, r.ExcludedMore, r.ExcludedFiles = paths, 0, files
	if len(paths) > MaxExcludedListed {
		r.Excluded, r.ExcludedMore = paths[:MaxExcludedListed:MaxExcludedListed], len(paths)-MaxExcludedListed
	}
}

// UnmarshalJSON reads a result. Earlier versions named the task's branch
// even when nothing was committed; such a branch was never made, so a
// result without a commit is read without a branch.
func (r *Result) UnmarshalJSON(b []byte) error {
	type plain Result // without this method
	if err := json.Unmarshal(b, (*plain)(r)); err != nil {
		return err
	}
	if r.Commit == "" {
		r.Branch = ""
	}
	return nil
}

// Duration is a time.Duration written in JSON as text, like "1m30.5s".
type Duration time.Duration

// MarshalJSON writes d as a Go duration string.
func (d Duration) MarshalJSON() ([]byte, error) {
	return json.Marshal(time.Duration(d).String())
}

// UnmarshalJSON reads a Go duration string.
func (d *Duration) UnmarshalJSON(b []byte) error {
	var s string
	if err := json.Unmarshal(b, &s); err != nil {
		return fmt.Errorf("duration: want a string like \"1m30s\": %w", err)
	}
	v, err := time.ParseDuration(s)
	if err != nil {
		return fmt.Errorf("duration: %w", err)
	}
	*d = Duration(v)
	return nil
}
