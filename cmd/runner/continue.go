package main

import (
	"context"
	"errors"
	"fmt"
	"os"

	"github.com/spf13/cobra"

	"github.com/runner-dev/runner/internal/batch"
	"github.com/runner-dev/runner/internal/cli"
	runreport "github.com/runner-dev/runner/internal/report"
	"github.com/runner-dev/runner/tasks"
)

// continueOptions are the flags of `runner continue`.
type continueOptions struct {
	out       string
	id        string
	budgetUSD float64
	maxSteps  int
	prompt    string
	model     modelFlags
}

const continueLong = `Continue a task that ran out: one whose latest attempt ended
budget_exhausted, step_limit, time_limit or check_failed.

A new attempt starts a sandbox from the task's branch as the earlier attempt
left it (from the task's base if it committed nothing), gives the agent its
history back, rebuilt from the trajectories (compacted as it was, so that a
provider's prompt cache still applies), tells it why it stopped (and
--prompt's guidance), and lets it go on with new limits. The task's check
runs as before. The attempt is added to results.jsonl (it names the attempt
it continued) and its work is committed on the same branch, one commit on
top of the earlier one: no --force is needed, and a branch someone
committed to since is refused. A task on a remote repository goes on from
the branch its earlier attempt pushed (push: true), and its commit is
pushed there as a fast-forward.

--budget caps what this continuation spends, on its own: what earlier
attempts spent does not count against it, and it never spends past it. By
default the task's own budget and max steps apply again. The task's
definition (repository, image, check, policy) is the one the out directory
kept when it last ran.

A task that succeeded, that ended otherwise, or whose trajectory or
definition is missing or corrupt is refused with exit code 2.`

func newContinueCmd(d *deps, runF func(context.Context, *continueOptions) error) *cobra.Command {
	opts := &continueOptions{}
	cmd := &cobra.Command{
		Use:     "continue --out OUT ID",
		Short:   "Continue a task that ran out of budget, steps or time, or whose check failed",
		Long:    continueLong,
		Example: "  runner continue --out runs/today fix-typo --budget 0.50 --prompt \"The tests are in tests/unit.\"",
		Args:    cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			opts.id = args[0]
			if err := opts.model.complete(d.getenv); err != nil {
				return err
			}
			if opts.budgetUSD < 0 || opts.maxSteps < 0 {
				return cli.Usagef("--budget and --max-steps cannot be negative")
			}
			if runF != nil {
				return runF(cmd.Context(), opts)
			}
			return continueTask(cmd.Context(), d, opts)
		},
	}
	f := cmd.Flags()
	f.StringVarP(&opts.out, "out", "o", "runner-out", "out `directory` of the run that holds the task")
	f.Float64Var(&opts.budgetUSD, "budget", 0, "USD cap of this continuation alone (default: the task's budget)")
	f.IntVar(&opts.maxSteps, "max-steps", 0, "model calls of this continuation (default: the task's max steps)")
	f.StringVar(&opts.prompt, "prompt", "", "more guidance for the agent as it goes on")
	opts.model.register(cmd)
	d.backend.register(cmd)
	return cmd
}

// continueTask runs one continuation with the machinery of run: the
// engine, the endpoint, the out directory's lock, and the report.
func continueTask(ctx context.Context, d *deps, opts *continueOptions) error {
	if err := tasks.CheckID(opts.id); err != nil {
		return cli.Usagef("%v", err)
	}
	if _, err := os.Stat(opts.out); err != nil {
		return &cli.ExitError{Code: cli.ExitUsage, Err: fmt.Errorf("out directory: %w", err)}
	}
	if mergedBefore(opts.out) {
		return cli.Usagef("--out %s holds the merged results of shards (runner merge); continue %s in its shard's out directory, then merge again",
			opts.out, opts.id)
	}
	s, err := openSession(ctx, d, &opts.model, opts.out, nil, sessionHooks{})
	if err != nil {
		return err
	}
	defer s.close()
	endpoint, err := opts.model.endpoint(1, nil)
	if err != nil {
		return err
	}
	defer endpoint.Close()
	if !d.globals.json {
		d.printer.Line("continuing %s", opts.id)
	}
	res, err := batch.Continue(ctx, batch.ContinueOptions{
		ID: opts.id, BudgetUSD: opts.budgetUSD, MaxSteps: opts.maxSteps, Prompt: opts.prompt,
	}, batch.Options{RunID: s.runID, Agent: opts.model.agentConfig()}, s.deps(d, &opts.model, endpoint))
	s.end(ctx, d, "the continuation's sandbox")
	switch {
	case errors.Is(err, batch.ErrCannotContinue):
		return &cli.ExitError{Code: cli.ExitUsage, Err: err}
	case res.Attempt == 0 && err != nil:
		return configErr(err)
	}
	index := ""
	if rerr := runreport.Write(context.WithoutCancel(ctx), opts.out, runreport.Options{Version: readBuildInfo().Version}); rerr != nil {
		d.printer.Warn("the report: %v", rerr)
	} else {
		index = runreport.Options{}.Index(opts.out)
	}
	if d.globals.json {
		if jerr := d.printer.JSON(res); jerr != nil {
			return jerr
		}
	} else {
		printSummary(d.printer, batch.Summary{Results: []tasks.Result{res}}, opts.out, index)
	}
	switch {
	case err != nil:
		return err
	case ctx.Err() != nil:
		return cli.ErrInterrupted
	case res.Status != tasks.StatusSucceeded:
		return &cli.ExitError{Code: cli.ExitFailure}
	}
	return nil
}
