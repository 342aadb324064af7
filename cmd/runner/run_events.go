package main

import (
	"bytes"
	"encoding/json"
	"io"
	"sync"
	"time"

	"github.com/runner-dev/runner/internal/batch"
	"github.com/runner-dev/runner/internal/termsafe"
	"github.com/runner-dev/runner/tasks"
)

// event is one line of `runner run --events`: a JSON object naming the
// event, the task and what happened. Fields that do not apply are left
// out. The format is documented in README.md.
type event struct {
	Time  time.Time `json:"time"`
	Event string    `json:"event"`
	// run_started
	RunID        string   `json:"run_id,omitempty"`
	Tasks        int      `json:"tasks,omitempty"`
	RunBudgetUSD *float64 `json:"run_budget_usd,omitempty"`
	// every task event
	Task string `json:"task,omitempty"`
	// every event of one attempt of a best-of-n task: its number
	Try int `json:"try,omitempty"`
	// task_started
	Attempt int `json:"attempt,omitempty"`
	// phase, step
	Phase   string `json:"phase,omitempty"`
	Step    int    `json:"step,omitempty"`
	Agent   string `json:"agent,omitempty"` // step: the sub-agent's id
	Purpose string `json:"purpose,omitempty"`
	// step
	CostUSD     *float64      `json:"cost_usd,omitempty"`
	Tokens      *tasks.Tokens `json:"tokens,omitempty"`
	TaskCostUSD *float64      `json:"task_cost_usd,omitempty"`
	RunCostUSD  *float64      `json:"run_cost_usd,omitempty"`
	Failed      bool          `json:"failed,omitempty"`
	// task_finished, task_skipped
	Result *tasks.Result `json:"result,omitempty"`
	// run_finished
	Summary *batch.Summary `json:"summary,omitempty"`
	Report  string         `json:"report,omitempty"`
}

// eventWriter writes events as JSON Lines, one whole line per write, what
// a terminal could act on written as \u escapes. A nil *eventWriter
// writes nothing. It is safe for concurrent use.
type eventWriter struct {
	mu  sync.Mutex
	w   io.Writer
	err error
}

func (e *eventWriter) emit(ev event) {
	if e == nil {
		return
	}
	if ev.Time.IsZero() {
		ev.Time = time.Now().UTC()
	}
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(ev); err != nil {
		return
	}
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.err == nil {
		_, e.err = e.w.Write(termsafe.JSON(buf.Bytes()))
	}
}
