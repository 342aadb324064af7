package main

import (
	"fmt"
	"sync"
	"time"

	"github.com/runner-dev/runner/agent"
	"github.com/runner-dev/runner/internal/cli"
	"github.com/runner-dev/runner/tasks"
)

// progress reports tasks starting and ending on stderr, so that stdout
// keeps only the summary (or the JSON).
type progress struct {
	mu    sync.Mutex
	p     *cli.Printer
	quiet bool
}

func newProgress(p *cli.Printer, quiet bool) *progress { return &progress{p: p, quiet: quiet} }

func (g *progress) say(format string, a ...any) {
	if g.quiet {
		return
	}
	g.mu.Lock()
	defer g.mu.Unlock()
	g.p.Note(format, a...)
}

// Endpoint reports a change of the model endpoint's health (down, up,
// rate-limiting), in JSON mode too: it explains why the run waits.
func (g *progress) Endpoint(c agent.EndpointChange) {
	g.mu.Lock()
	defer g.mu.Unlock()
	g.p.Warn("%s", c)
}

func (g *progress) Skipped(t tasks.Task, r tasks.Result) {
	g.say("= %s: already %s (attempt %d), skipped", t.ID, r.Status, r.Attempt)
}

func (g *progress) Started(t tasks.Task, attempt int) {
	if attempt > 1 {
		g.say("> %s: started (attempt %d, the last one was interrupted)", t.ID, attempt)
		return
	}
	g.say("> %s: started", t.ID)
}

func (g *progress) Finished(t tasks.Task, r tasks.Result) {
	mark := "x"
	if r.Status == tasks.StatusSucceeded {
		mark = "+"
	}
	line := fmt.Sprintf("%s %s: %s in %s, %d steps, $%.4f", mark, t.ID, r.Status,
		time.Duration(r.Duration).Round(time.Second), r.Steps, r.CostUSD)
	if r.Commit != "" {
		line += ", branch " + r.Branch
	}
	if r.Error != "" {
		line += ": " + r.Error
	}
	g.say("%s", line)
	for _, w := range r.Warnings {
		g.say("! %s: %s", t.ID, w)
	}
}
