package batch

import (
	"github.com/runner-dev/runner/agent"
	"github.com/runner-dev/runner/budget"
	"github.com/runner-dev/runner/tasks"
)

// Phase is what a running task is doing.
type Phase string

// The phases of a task, in the order they come. PhaseStep repeats, once per
// model call, and comes back after a failed check.
const (
	PhaseCloning    Phase = "cloning"    // cloning the repository
	PhaseSetup      Phase = "setup"      // preparing the environment (the task's setup)
	PhaseSandbox    Phase = "sandbox"    // starting the sandbox
	PhaseStep       Phase = "step"       // a model call and the tool calls of its reply
	PhaseCheck      Phase = "check"      // running the task's check
	PhaseCommitting Phase = "committing" // copying the workspace out and committing it
	PhasePushing    Phase = "pushing"    // pushing the branch
)

// Step is a model call that returned, with what it cost.
type Step struct {
	// N numbers the task's model calls from 1, or a sub-agent's, of
	// which Agent is the id ("1", "1.2"; see agent.Event.Agent).
	N     int
	Agent string
	// Purpose is "" for a step of the task, "compaction" for a summary of
	// the history.
	Purpose string
	// CostUSD is what this call cost; Tokens what it used.
	CostUSD float64
	Tokens  tasks.Tokens
	// TaskUSD and RunUSD are what the task and the whole run have spent
	// so far.
	TaskUSD, RunUSD float64
	// Failed is set when the call got no reply; what it was charged, if
	// anything, is in TaskUSD.
	Failed bool
}

// PhaseProgress is a Progress that also follows each running task: the
// phases it goes through and each model call it makes. When Deps.Progress
// implements it, Run calls these methods from the task's goroutine, so an
// implementation must be safe for concurrent use and quick.
type PhaseProgress interface {
	Progress
	// Phase tells that task t entered phase p; step is the model call
	// under way for PhaseStep, 0 otherwise.
	Phase(t tasks.Task, p Phase, step int)
	// Step tells that a model call of task t returned.
	Step(t tasks.Task, s Step)
}

// phase tells the progress, if it follows phases, that the task entered p.
func (w *work) phase(p Phase) {
	if pp, ok := w.deps.Progress.(PhaseProgress); ok {
		pp.Phase(w.task, p, 0)
	}
}

// watchSteps reports the task's model calls, read from its trajectory, to
// the progress, if it follows phases. Only numbers are passed on: no text
// of the trajectory.
func (w *work) watchSteps(meter, run *budget.Meter) {
	pp, ok := w.deps.Progress.(PhaseProgress)
	if !ok {
		return
	}
	w.traj.Observe(func(e agent.Event) {
		switch {
		case e.Type == agent.EventRequest && e.Agent == "":
			pp.Phase(w.task, PhaseStep, e.Step)
		case e.Type == agent.EventResponse:
			s := Step{N: e.Step, Agent: e.Agent, Purpose: e.Purpose, CostUSD: e.CostUSD, Failed: e.Usage == nil,
				TaskUSD: meter.Summary().SpentUSD, RunUSD: run.Summary().SpentUSD}
			if e.Usage != nil {
				s.Tokens = tasks.Tokens{In: e.Usage.PromptTokens, Cached: e.Usage.CachedTokens, Out: e.Usage.CompletionTokens}
			}
			pp.Step(w.task, s)
		}
	})
}
