// Package agent drives a chat model through tool calls in a sandbox until
// a task is done, within limits of steps, wall time and money.
//
// One history is both the prompt and (through the Trajectory) the record.
// Limits are checked in one place, before every model call. A command that
// fails is an observation for the model, not an error; only the sandbox or
// the model failing ends a run early, and every run ends with a Status.
package agent

import (
	"context"
	"time"

	"github.com/runner-dev/runner/budget"
	"github.com/runner-dev/runner/internal/policy"
)

// Status is how a run ended.
type Status string

// The statuses a run can end with.
const (
	StatusCompleted       Status = "completed"        // the model called complete or stopped calling tools
	StatusStepLimit       Status = "step_limit"       // MaxSteps model calls were made
	StatusTimeLimit       Status = "time_limit"       // TimeLimit passed
	StatusBudgetExhausted Status = "budget_exhausted" // the budget cannot pay another call
	StatusModelError      Status = "model_error"      // the model API failed, or kept sending malformed calls
	StatusSandboxError    Status = "sandbox_error"    // the sandbox failed
	StatusInterrupted     Status = "interrupted"      // the caller's context was cancelled (its deadline passing is time_limit)
)

// Config sets up a run. Model and Price are required; zero values elsewhere
// select the defaults.
type Config struct {
	// Model is the model name sent to the API.
	Model string
	// Price of the model; its zero value counts tokens but no money.
	Price budget.Price
	// Meter receives every charge; nil means an unlimited meter of its own.
	// Give the task's meter (whose parent is the run's) for a capped run.
	Meter *budget.Meter
	// MaxSteps caps the model calls; default 100.
	MaxSteps int
	// TimeLimit caps the run's wall time; default 1h.
	TimeLimit time.Duration
	// MaxHeldTime is how much of the time its model calls spend held by
	// the endpoint gate (waiting for an endpoint that is down, or for a
	// turn while it rate-limits; see Endpoint) does not count against
	// TimeLimit, in total. Zero: all of it counts.
	MaxHeldTime time.Duration
	// MaxCompletionTokens is the reply limit asked for, lowered when the
	// budget cannot pay it; default 8192. MinCompletionTokens is the least
	// worth calling for; default 256.
	MaxCompletionTokens int64
	MinCompletionTokens int64
	// FinalReserve is the share of the budget (of the tightest cap over
	// the task's meter) kept from the start for the final call. When a
	// step no longer fits the budget without it, the model is told once,
	// in a user message, how much is left, and its calls may use the
	// reserve from then on. Default 0.03; negative: no reserve and no
	// message. At most 0.5.
	FinalReserve float64
	// ContextWindow is the model's context in tokens; default 128000.
	ContextWindow int64
	// CompactAt is the fraction of the window at which history is
	// compacted; default 0.8. NoCompaction turns compaction off.
	CompactAt    float64
	NoCompaction bool
	// KeepRecent is how many of the latest turns compaction leaves
	// verbatim; default 4.
	KeepRecent int
	// MaxToolOutput caps the bytes of one tool result shown to the model;
	// default 16 KiB (head and tail kept), and never more than an eighth of
	// the context window.
	MaxToolOutput int
	// MaxMalformed ends the run after this many turns in a row whose tool
	// calls were all malformed; default 3.
	MaxMalformed int
	// Network tells the model whether the sandbox has network access.
	Network bool
	// Egress, when Network is set, names the only hosts the sandbox may
	// reach (an allowlist enforced by a proxy), for the model to know.
	Egress []string
	// Policy refuses tool calls before they reach the sandbox: writes to
	// protected paths, denied commands, and whatever its pre-tool hook
	// refuses. Its zero value refuses nothing.
	Policy policy.Policy
	// HostTools are tools that run on the host rather than in the sandbox
	// (the task's MCP servers), offered after the built-in ones; each call
	// passes the policy pipeline like any other (the pre-tool hook is
	// asked about it). Their names must not be a built-in tool's.
	HostTools []Tool
	// Ask answers ask_question interactively; nil runs unattended.
	Ask func(ctx context.Context, question string) (string, error)
	// Approve, when set, is asked about every run_command, write_file and
	// edit_file call that the policy lets through, before it runs: the
	// last stage of the policy pipeline, for an attended run. A refused
	// call is not run and the model is told the person's reason; an error
	// ends the run. nil runs every call the policy allows.
	Approve func(ctx context.Context, req ApprovalRequest) (Approval, error)
	// Delegate offers the delegate tool for sub-agents (see Delegation);
	// its zero value offers none.
	Delegate Delegation
	// Trajectory records every event; nil records nothing.
	Trajectory *Trajectory
	// Now is the clock; nil means time.Now.
	Now func() time.Time
}

func (c Config) withDefaults() Config {
	if c.Meter == nil {
		c.Meter, _ = budget.NewMeter(0, nil)
	}
	if c.MaxSteps <= 0 {
		c.MaxSteps = 100
	}
	if c.TimeLimit <= 0 {
		c.TimeLimit = time.Hour
	}
	if c.MaxCompletionTokens <= 0 {
		c.MaxCompletionTokens = 8192
	}
	if c.MinCompletionTokens <= 0 {
		c.MinCompletionTokens = 256
	}
	c.MinCompletionTokens = min(c.MinCompletionTokens, c.MaxCompletionTokens)
	switch {
	case c.FinalReserve == 0:
		c.FinalReserve = DefaultFinalReserve
	case c.FinalReserve < 0:
		c.FinalReserve = 0
	}
	c.FinalReserve = min(c.FinalReserve, 0.5)
	if c.ContextWindow <= 0 {
		c.ContextWindow = 128000
	}
	if c.CompactAt <= 0 || c.CompactAt > 1 {
		c.CompactAt = 0.8
	}
	if c.KeepRecent <= 0 {
		c.KeepRecent = 4
	}
	if c.MaxToolOutput <= 0 {
		c.MaxToolOutput = 16 << 10
	}
	// One tool result never takes more than about an eighth of the window,
	// so that the latest turn always fits.
	c.MaxToolOutput = min(c.MaxToolOutput, int(c.ContextWindow)*bytesPerToken/8)
	if c.MaxMalformed <= 0 {
		c.MaxMalformed = 3
	}
	if c.Now == nil {
		c.Now = time.Now
	}
	return c
}

// Task is what the agent is asked to do.
type Task struct {
	ID     string
	Prompt string
}

// Outcome is how a run (or a continuation of it) ended.
type Outcome struct {
	Status Status `json:"status"`
	// Summary is the model's own account, from complete or its last reply.
	Summary string `json:"summary,omitempty"`
	// Error explains a status other than completed.
	Error string `json:"error,omitempty"`
	// Steps counts model calls, compaction summaries included.
	Steps int `json:"steps"`
	// Questions the model asked with ask_question.
	Questions []string `json:"questions,omitempty"`
	// Spend is the task meter's account.
	Spend budget.Summary `json:"spend"`
	// Compactions counts how often the history was compacted.
	Compactions int `json:"compactions,omitempty"`
}
