package main

import (
	"context"
	"log/slog"
	"os"
	"time"

	"github.com/runner-dev/runner/internal/batch"
	"github.com/runner-dev/runner/internal/cli"
	runreport "github.com/runner-dev/runner/internal/report"
	"github.com/runner-dev/runner/tasks"
)

// startProgress sets up what tells about a run as it goes: the progress
// on stderr, the events on stdout (--events) and the report in the out
// directory. It returns the run's progress and the function that ends it
// all once the run is over, which returns the report's index ("" when
// none was written: nothing ran).
func (d *deps) startProgress(opts *runOptions, runID string, queue []tasks.Task, asks bool) (
	*runProgress, func(context.Context, batch.Summary, error) string) {
	stderr, isFile := d.stderr.(*os.File)
	popt := progressOptions{
		total: len(queue), runBudget: opts.runBudget, quiet: d.globals.json,
		// The board owns stderr: not when a question may be asked there,
		// nor when logs are written there.
		live:   isFile && cli.IsTerminal(d.stderr) && !asks && !d.log.Enabled(context.Background(), slog.LevelInfo),
		stderr: d.stderr,
		color:  !d.globals.noColor && d.getenv("NO_COLOR") == "",
	}
	if popt.live {
		popt.termSize = stderrSize(stderr)
	}
	g := newRunProgress(d.printer, popt)
	if opts.events {
		g.events = &eventWriter{w: d.stdout}
		budget := opts.runBudget
		g.events.emit(event{Event: "run_started", RunID: runID, Tasks: len(queue), RunBudgetUSD: &budget})
	}
	ids := make([]string, len(queue))
	for i, t := range queue {
		ids[i] = t.ID
	}
	meta := runreport.Meta{RunID: runID, StartedAt: time.Now().UTC(), RunBudgetUSD: opts.runBudget,
		Concurrency: opts.concurrency, Queue: ids}
	ropt := runreport.Options{Version: readBuildInfo().Version, Live: g.liveTasks}
	warn := func(err error) { d.printer.Warn("the report: %v", err) }
	g.begin = func() {
		if err := runreport.WriteMeta(opts.out, meta); err != nil {
			warn(err)
		}
		g.report = runreport.NewUpdater(opts.out, ropt, warn)
	}
	finish := func(ctx context.Context, sum batch.Summary, runErr error) string {
		g.stop()
		index := ""
		if runErr == nil && g.report != nil {
			meta.FinishedAt = time.Now().UTC()
			if err := runreport.WriteMeta(opts.out, meta); err != nil {
				warn(err)
			}
			if err := g.report.Close(ctx); err != nil {
				warn(err)
			} else {
				index = ropt.Index(opts.out)
			}
		}
		if runErr == nil {
			g.events.emit(event{Event: "run_finished", Summary: &sum, Report: index})
		}
		return index
	}
	return g, finish
}
