// Package progress keeps the live state of a run and draws it on a
// terminal: one line per running task with its phase and spend, and a
// line of totals, redrawn in place.
package progress

import (
	"fmt"
	"slices"
	"strings"
	"sync"
	"time"
	"unicode/utf8"

	"github.com/runner-dev/runner/internal/termsafe"
)

// Task is a running task as the board knows it.
type Task struct {
	ID string
	// Phase is what the task is doing ("cloning", "step"...); Step is
	// the model call under way in phase "step".
	Phase string
	Step  int
	// SpentUSD is what the task has spent; BudgetUSD its cap (0: none).
	SpentUSD, BudgetUSD float64
	Since               time.Time
}

// Board is the state of a run: the tasks running, and counts of the
// others. It is safe for concurrent use.
type Board struct {
	mu        sync.Mutex
	total     int
	runBudget float64
	start     time.Time
	running   []*Task // in the order they started
	succeeded int
	failed    int
	skipped   int
	runSpent  float64
}

// NewBoard starts a board for a run of total tasks with a run budget (0:
// none), starting now.
func NewBoard(total int, runBudgetUSD float64, now time.Time) *Board {
	return &Board{total: total, runBudget: runBudgetUSD, start: now}
}

func (b *Board) find(id string) *Task {
	for _, t := range b.running {
		if t.ID == id {
			return t
		}
	}
	return nil
}

// Start adds a running task.
func (b *Board) Start(id string, budgetUSD float64, now time.Time) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.find(id) == nil {
		b.running = append(b.running, &Task{ID: id, Phase: "starting", BudgetUSD: budgetUSD, Since: now})
	}
}

// Phase records that task id entered a phase.
func (b *Board) Phase(id, phase string, step int) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if t := b.find(id); t != nil {
		t.Phase, t.Step = phase, step
	}
}

// Spend records what task id and the whole run have spent so far.
func (b *Board) Spend(id string, taskUSD, runUSD float64) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if t := b.find(id); t != nil {
		t.SpentUSD = taskUSD
	}
	b.runSpent = max(b.runSpent, runUSD)
}

// Finish removes task id from the running ones and counts it.
func (b *Board) Finish(id string, succeeded bool, costUSD float64) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.running = slices.DeleteFunc(b.running, func(t *Task) bool { return t.ID == id })
	if succeeded {
		b.succeeded++
	} else {
		b.failed++
	}
}

// Skip counts a task an earlier run finished.
func (b *Board) Skip() {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.skipped++
}

// Running returns a copy of the running tasks, in the order they started.
func (b *Board) Running() []Task {
	b.mu.Lock()
	defer b.mu.Unlock()
	out := make([]Task, len(b.running))
	for i, t := range b.running {
		out[i] = *t
	}
	return out
}

// etaAfter is how many tasks must have finished before an ETA is shown.
const etaAfter = 3

// ANSI colours of the board.
const (
	green = "\x1b[32m"
	red   = "\x1b[31m"
	cyan  = "\x1b[36m"
	dim   = "\x1b[2m"
	reset = "\x1b[0m"
)

// Lines draws the board at time now for a terminal width columns wide and
// height rows high: a line per running task, as many as fit, then the
// totals. No line is wider than width-1 columns, so none wraps.
func (b *Board) Lines(now time.Time, width, height int, color bool) []string {
	b.mu.Lock()
	defer b.mu.Unlock()
	paint := func(code, s string) string {
		if !color || s == "" {
			return s
		}
		return code + s + reset
	}
	var lines []string
	room := max(height-2, 1) // the totals line, and one row spare for the cursor
	// The id column is as wide as the longest id, within what the width
	// leaves to it beside the phase, the spend and the clock (37 columns).
	idWidth := 8
	for _, t := range b.running {
		idWidth = max(idWidth, len(termsafe.Escape(t.ID)))
	}
	idWidth = max(min(idWidth, 24, width-1-37), 8)
	for i, t := range b.running {
		if i == room-1 && len(b.running) > room {
			lines = append(lines, fit(fmt.Sprintf("  … and %d more running", len(b.running)-i), width))
			break
		}
		phase := t.Phase
		if phase == "step" {
			phase = fmt.Sprintf("step %d", t.Step)
		}
		spend := fmt.Sprintf("$%.4f", t.SpentUSD)
		if t.BudgetUSD > 0 {
			spend += fmt.Sprintf(" of $%.2f", t.BudgetUSD)
		}
		id := termsafe.Escape(t.ID)
		if len(id) > idWidth {
			id = id[:idWidth-1] + "…" // escaped ids are ASCII
		}
		line := fmt.Sprintf("  %-*s %-10s %-17s %s", idWidth, id, phase, spend, clock(now.Sub(t.Since)))
		if fitted := fit(line, width); fitted != line || !color {
			lines = append(lines, fitted)
			continue
		}
		pad := strings.Repeat(" ", max(10-len(phase), 0))
		lines = append(lines, fmt.Sprintf("  %-*s %s%s %-17s %s", idWidth, id, paint(cyan, phase), pad, spend, clock(now.Sub(t.Since))))
	}
	done := b.succeeded + b.failed
	queued := max(b.total-done-b.skipped-len(b.running), 0)
	parts := []string{
		paint(green, fmt.Sprintf("%d done", b.succeeded)),
		paint(red, fmt.Sprintf("%d failed", b.failed)),
		fmt.Sprintf("%d running", len(b.running)),
		fmt.Sprintf("%d queued", queued),
	}
	if b.skipped > 0 {
		parts = append(parts, fmt.Sprintf("%d skipped", b.skipped))
	}
	spend := fmt.Sprintf("$%.4f", b.runSpent)
	if b.runBudget > 0 {
		spend += fmt.Sprintf(" of $%.2f", b.runBudget)
	}
	parts = append(parts, spend)
	if left := queued + len(b.running); done >= etaAfter && left > 0 {
		elapsed := now.Sub(b.start)
		eta := time.Duration(float64(elapsed) / float64(done) * float64(left))
		parts = append(parts, "ETA "+clock(eta))
	}
	plain := strings.Join(parts, " · ")
	if color {
		plain = stripColor(plain)
	}
	if fitted := fit(plain, width); fitted != plain || !color {
		lines = append(lines, fitted)
	} else {
		lines = append(lines, strings.Join(parts, " · "))
	}
	return lines
}

// fit cuts s to at most width-1 columns, marking a cut with "…". The
// board's text is ASCII but for the mark, one column per character.
func fit(s string, width int) string {
	limit := max(width-1, 1)
	if utf8.RuneCountInString(s) <= limit {
		return s
	}
	r := []rune(s)
	return string(r[:limit-1]) + "…"
}

func stripColor(s string) string {
	for _, c := range []string{green, red, cyan, dim, reset} {
		s = strings.ReplaceAll(s, c, "")
	}
	return s
}

// clock writes d as 0:42, 12:05 or 1:02:09.
func clock(d time.Duration) string {
	s := int(d.Round(time.Second).Seconds())
	if s < 3600 {
		return fmt.Sprintf("%d:%02d", s/60, s%60)
	}
	return fmt.Sprintf("%d:%02d:%02d", s/3600, s/60%60, s%60)
}
