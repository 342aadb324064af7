package main

import (
	"fmt"
	"path/filepath"
	"time"

	"github.com/runner-dev/runner/internal/batch"
	runreport "github.com/runner-dev/runner/internal/report"
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

// showTry finds the line of attempt opts.try of a best-of-n task, among
// the attempts its line r sums up.
func showTry(t *runreport.Task, r tasks.Result, opts *showOptions) (tasks.Result, error) {
	for _, s := range r.Tries {
		if s.Try != opts.try {
			continue
		}
		for _, line := range t.Tries {
			if line.Try == s.Try && line.Attempt == s.Attempt {
				return line, nil
			}
		}
		return r, fmt.Errorf("task %s: attempt %d never started (%s)", opts.id, opts.try, s.Error)
	}
	return r, fmt.Errorf("task %s has no attempt %d in %s (its line lists %d)", opts.id, opts.try,
		filepath.Join(opts.out, tasks.ResultsFile), len(r.Tries))
}

// keptAttempt names the attempt a best-of-n task kept, for its line.
func keptAttempt(r tasks.Result) string {
	if r.Kept == 0 {
		return ""
	}
	return fmt.Sprintf(" (attempt %d of %d kept)", r.Kept, r.BestOf)
}
