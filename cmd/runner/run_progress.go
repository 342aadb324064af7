package main

import (
	"fmt"
	"io"
	"os"
	"sync"
	"time"

	"golang.org/x/term"

	"github.com/runner-dev/runner/agent"
	"github.com/runner-dev/runner/internal/batch"
	"github.com/runner-dev/runner/internal/cli"
	"github.com/runner-dev/runner/internal/progress"
	runreport "github.com/runner-dev/runner/internal/report"
	"github.com/runner-dev/runner/internal/termsafe"
	"github.com/runner-dev/runner/tasks"
)

// redrawEvery is how often the live board moves its clocks and ETA.
const redrawEvery = 500 * time.Millisecond

// runProgress follows a run's tasks and tells about them: on stderr, as a
// live board redrawn in place when stderr is a terminal, else as one
// plain line per task started and ended; on stdout as JSON events with
// --events; and in the report, refreshed as tasks end.
type runProgress struct {
	mu    sync.Mutex
	p     *cli.Printer
	quiet bool // no lines on stderr (--json)
	board *progress.Board
	live  *progress.Terminal // nil: plain lines
	// events and report are nil when not asked for.
	events *eventWriter
	report *runreport.Updater
	// begin runs once, when the first task starts or is skipped: the
	// run has passed its checks.
	begin     func()
	beginOnce sync.Once
	stopOnce  sync.Once
}

var _ batch.PhaseProgress = (*runProgress)(nil)

// progressOptions say how a run's progress is told.
type progressOptions struct {
	total     int
	runBudget float64
	quiet     bool
	// live draws the board on stderr, a terminal of the size termSize
	// reports, in colour or not.
	live     bool
	stderr   io.Writer
	color    bool
	termSize func() (int, int)
}

func newRunProgress(p *cli.Printer, opt progressOptions) *runProgress {
	g := &runProgress{p: p, quiet: opt.quiet, board: progress.NewBoard(opt.total, opt.runBudget, time.Now())}
	if opt.live && !opt.quiet {
		g.live = progress.NewTerminal(opt.stderr, g.board, opt.termSize, opt.color)
		g.live.Start(redrawEvery)
	}
	return g
}

// stderrSize reads the size of the terminal on stderr; 80x24 if unknown.
func stderrSize(f *os.File) func() (int, int) {
	return func() (int, int) {
		w, h, err := term.GetSize(int(f.Fd()))
		if err != nil || w <= 0 || h <= 0 {
			return 80, 24
		}
		return w, h
	}
}

// stop removes the live board; what it printed stays.
func (g *runProgress) stop() {
	g.stopOnce.Do(func() {
		if g.live != nil {
			g.live.Stop()
		}
	})
}

// started runs begin the first time a task starts or is skipped.
func (g *runProgress) started() {
	g.beginOnce.Do(func() {
		if g.begin != nil {
			g.begin()
		}
	})
}

// say prints a line of runner's own format with untrusted arguments: a
// plain line, or a line above the live board.
func (g *runProgress) say(format string, a ...any) {
	if g.quiet {
		return
	}
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.live != nil {
		for i, v := range a {
			a[i] = termsafe.Escape(fmt.Sprint(v))
		}
		g.live.Print(fmt.Sprintf(format, a...))
		return
	}
	g.p.Note(format, a...)
}

// Endpoint reports a change of the model endpoint's health (down, up,
// rate-limiting), in JSON mode too: it explains why the run waits.
func (g *runProgress) Endpoint(c agent.EndpointChange) {
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.live != nil {
		g.live.Print("warning: " + termsafe.Escape(c.String()))
		return
	}
	g.p.Warn("%s", c)
}

func (g *runProgress) redraw() {
	if g.live != nil {
		g.live.Redraw()
	}
}

// liveTasks is what the report shows of the running tasks.
func (g *runProgress) liveTasks() map[string]runreport.Live {
	out := map[string]runreport.Live{}
	for _, t := range g.board.Running() {
		out[t.ID] = runreport.Live{Phase: t.Phase, Step: t.Step, SpentUSD: t.SpentUSD, Since: t.Since}
	}
	return out
}

func (g *runProgress) Skipped(t tasks.Task, r tasks.Result) {
	g.started()
	g.board.Skip()
	g.events.emit(event{Event: "task_skipped", Task: t.ID, Result: &r})
	g.say("= %s: already %s (attempt %d), skipped", t.ID, r.Status, r.Attempt)
	g.redraw()
}

func (g *runProgress) Started(t tasks.Task, attempt int) {
	g.started()
	g.board.Start(t.ID, t.BudgetUSD, time.Now())
	g.events.emit(event{Event: "task_started", Task: t.ID, Attempt: attempt})
	g.report.Changed()
	if g.live != nil {
		g.redraw()
		return
	}
	if attempt > 1 {
		g.say("> %s: started (attempt %d, the last one was interrupted)", t.ID, attempt)
		return
	}
	g.say("> %s: started", t.ID)
}

func (g *runProgress) Phase(t tasks.Task, p batch.Phase, step int) {
	g.board.Phase(t.ID, string(p), step)
	g.events.emit(event{Event: "phase", Task: t.ID, Try: t.Try, Phase: string(p), Step: step})
	g.redraw()
}

func (g *runProgress) Step(t tasks.Task, s batch.Step) {
	g.board.Spend(t.ID, s.TaskUSD, s.RunUSD)
	tokens := s.Tokens
	g.events.emit(event{Event: "step", Task: t.ID, Try: t.Try, Step: s.N, Agent: s.Agent, Purpose: s.Purpose, CostUSD: &s.CostUSD, Tokens: &tokens,
		TaskCostUSD: &s.TaskUSD, RunCostUSD: &s.RunUSD, Failed: s.Failed})
	g.redraw()
}

func (g *runProgress) Finished(t tasks.Task, r tasks.Result) {
	g.board.Finish(t.ID, r.Status == tasks.StatusSucceeded, r.CostUSD)
	g.events.emit(event{Event: "task_finished", Task: t.ID, Result: &r})
	g.report.Changed(t.ID)
	mark := "x"
	if r.Status == tasks.StatusSucceeded {
		mark = "+"
	}
	line := fmt.Sprintf("%s %s: %s in %s, %d steps, $%.4f", mark, t.ID, r.Status,
		time.Duration(r.Duration).Round(time.Second), r.Steps, r.CostUSD)
	if r.Commit != "" {
		line += ", branch " + r.Branch
	}
	line += keptAttempt(r)
	if r.Error != "" {
		line += ": " + r.Error
	}
	g.say("%s", line)
	for _, w := range r.Warnings {
		g.say("! %s: %s", t.ID, w)
	}
}
