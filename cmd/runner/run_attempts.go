package main

import (
	"fmt"
	"time"

	"github.com/runner-dev/runner/internal/batch"
	"github.com/runner-dev/runner/tasks"
)

var _ batch.AttemptProgress = (*runProgress)(nil)

// AttemptStarted tells that attempt t.Try of a best-of-n task began: an
// attempt_started event, and a line when no board is drawn (the board
// shows the task's row).
func (g *runProgress) AttemptStarted(t tasks.Task, attempt int) {
	g.events.emit(event{Event: "attempt_started", Task: t.ID, Try: t.Try, Attempt: attempt})
	if g.live == nil {
		g.say("> %s: attempt %d of %d started", t.ID, t.Try, t.Attempts)
	}
}

// AttemptFinished tells that attempt t.Try ended: an attempt_finished
// event with its result, and a line.
func (g *runProgress) AttemptFinished(t tasks.Task, r tasks.Result) {
	g.events.emit(event{Event: "attempt_finished", Task: t.ID, Try: t.Try, Result: &r})
	g.report.Changed(t.ID)
	line := fmt.Sprintf("  %s: attempt %d of %d %s in %s, $%.4f", t.ID, t.Try, t.Attempts, r.Status,
		time.Duration(r.Duration).Round(time.Second), r.CostUSD)
	if r.Commit != "" {
		line += ", branch " + r.Branch
	}
	if r.Error != "" {
		line += ": " + r.Error
	}
	g.say("%s", line)
}
