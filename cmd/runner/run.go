package main

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/runner-dev/runner/agent"
	"github.com/runner-dev/runner/internal/attend"
	"github.com/runner-dev/runner/internal/batch"
	"github.com/runner-dev/runner/internal/cli"
	"github.com/runner-dev/runner/sandbox"
	"github.com/runner-dev/runner/tasks"
)

// runOptions are the flags of `runner run` (and most of `runner exec`).
type runOptions struct {
	out         string
	concurrency int
	force       bool
	runBudget   float64
	events      bool
	shardFlag   string
	// shard is the part of the queue this process runs (--shard); nil
	// when it runs the whole queue.
	shard *shard
	// shardRecord is what the out directory records of the shard: set by
	// runFile for a sharded run, checked and written once the store is
	// open.
	shardRecord *tasks.ShardRecord
	model       modelFlags
	policy      policyFlags
	defaults    batch.Defaults

	// envCacheSize bounds the cache of prepared environments.
	envCacheSize string
}

const runLong = `Run every task of a task file (YAML, or JSON Lines for generated queues).

For each task, runner clones the repository at the task's ref, starts a
sandbox container with the clone in /workspace, lets the agent work there,
runs the task's check, and commits the result on a new branch (agent/<id> by
default). Your branch, index and worktree are never touched.

The out directory holds results.jsonl (one line per task), trajectories/
(one JSON Lines file per attempt) and report/index.html, an HTML report kept
up to date as tasks end. Running again with the same out directory resumes:
finished tasks are skipped, interrupted ones run again.

Progress goes to stderr: a live board when it is a terminal, one line per
task otherwise. With --events, stdout carries one JSON object per event
(task started, phase changed, step done, task finished...) instead of the
summary table.

With --shard I/N, N runner processes split the queue: each runs the tasks
whose id hashes to its index I (FNV-1a of the id, modulo N), so adding a
task never moves the others, and each writes its own out directory, which
records the shard and refuses any other. auto/N takes I from
$JOB_COMPLETION_INDEX, set by a Kubernetes Indexed Job. --run-budget caps
each shard on its own: N shards may spend up to N times it in all.
runner merge gathers the shards' out directories into one for the report.

Exit code 0 when every task succeeded, 1 when one did not, 2 for a usage or
configuration error (nothing ran), 130 when interrupted.`

func newRunCmd(d *deps, runF func(context.Context, *runOptions, string) error) *cobra.Command {
	opts := &runOptions{}
	cmd := &cobra.Command{
		Use:   "run FILE",
		Short: "Run the tasks of a task file",
		Long:  runLong,
		Args:  cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			if err := opts.complete(d.getenv); err != nil {
				return err
			}
			if cmd.Flags().Changed("shard") {
				s, err := parseShard(opts.shardFlag, d.getenv)
				if err != nil {
					return err
				}
				opts.shard = &s
			}
			if runF != nil {
				return runF(cmd.Context(), opts, args[0])
			}
			return runFile(cmd.Context(), d, opts, args[0])
		},
	}
	f := cmd.Flags()
	f.StringVarP(&opts.out, "out", "o", "runner-out", "out `directory` for results.jsonl and trajectories; reuse it to resume")
	f.IntVarP(&opts.concurrency, "concurrency", "j", 1, "how many tasks run at once")
	f.BoolVar(&opts.force, "force", false, "overwrite task branches that already exist")
	f.Float64Var(&opts.runBudget, "run-budget", 0, "USD cap for the whole run, shared by all tasks (0: none); with --shard, for this shard alone")
	f.StringVar(&opts.shardFlag, "shard", "", shardHelp)
	f.StringVar(&opts.envCacheSize, "env-cache-size", "20g", "size cap of the cache of prepared environments (setup); least recently used first out; off: no cap")
	f.BoolVar(&opts.events, "events", false, "write one JSON object per event on stdout, for CI systems (not with --json)")
	addTaskDefaultFlags(cmd, &opts.defaults)
	opts.model.register(cmd)
	opts.policy.register(cmd)
	d.backend.register(cmd)
	return cmd
}

// complete fills in what the environment gives and checks the flags that
// run and exec share.
func (o *runOptions) complete(getenv func(string) string) error {
	if err := o.model.complete(getenv); err != nil {
		return err
	}
	if _, ok, err := tasks.ParseImageBuild(o.defaults.Image); ok && err != nil {
		return cli.Usagef("--image: %v", err)
	}
	return o.policy.complete()
}

// addTaskDefaultFlags adds the flags that fill in what task files leave unset.
func addTaskDefaultFlags(cmd *cobra.Command, d *batch.Defaults) {
	f := cmd.Flags()
	f.StringVar(&d.Image, "image", "", "sandbox image for tasks that name none (default runner-sandbox:latest); dockerfile:PATH or devcontainer builds it from the repository")
	f.StringVar(&d.Runtime, "runtime", "", "sandbox `runtime` for tasks that name none: runc, or runsc for gVisor (default: the engine's, runc)")
	f.Float64Var(&d.BudgetUSD, "budget", 0, "USD cap per task, for tasks that set none (0: none)")
	f.IntVar(&d.MaxSteps, "max-steps", 100, "model calls per task, for tasks that set none")
	f.DurationVar(&d.Timeout, "timeout", 30*time.Minute, "wall time per task, for tasks that set none")
}

// runFile loads a task file and runs it.
func runFile(ctx context.Context, d *deps, opts *runOptions, path string) error {
	q, err := tasks.Load(ctx, path)
	if err != nil {
		return err
	}
	if err := d.backend.fromQueue(q); err != nil {
		return err
	}
	queue := q.Tasks
	if opts.shard != nil {
		if queue, err = shardQueue(d, opts, path, q.Tasks); err != nil || queue == nil {
			return err
		}
	}
	return runQueue(ctx, d, opts, queue, nil)
}

// runQueue runs tasks with the shared machinery of run and exec, prints
// progress and the summary, and turns the outcome into an exit code.
func runQueue(ctx context.Context, d *deps, opts *runOptions, queue []tasks.Task, a *attended) error {
	if opts.events && d.globals.json {
		return cli.Usagef("--events and --json both write to stdout; choose one")
	}
	if err := d.backend.check(); err != nil {
		return err
	}
	// What the backend does not offer is refused before anything starts.
	if err := d.backend.refuse(queue, opts.defaults.Image); err != nil {
		return err
	}
	envLimit, err := parseCacheSize(opts.envCacheSize)
	if err != nil {
		return err
	}
	s, err := openSession(ctx, d, &opts.model, opts.out, queue, sessionHooks{
		opened: func(store *tasks.Store) error {
			if err := store.ClaimShard(opts.shardRecord); err != nil {
				return err
			}
			return preflight(d, queue, store)
		},
		connected: func(e sandbox.Backend) error {
			if err := checkRuntimes(ctx, e, queue, opts.defaults.Runtime); err != nil {
				return err
			}
			// Sandboxes of runs that died (their owner is gone or their
			// deadline passed) are removed first; those of live runs are
			// left alone.
			if rep, err := e.Cleanup(ctx, false); err == nil && len(rep.Removed) > 0 {
				d.printer.Line("removed %d sandbox container(s) left by runs that are over", len(rep.Removed))
			}
			return nil
		},
	})
	if err != nil {
		return err
	}
	defer s.close()

	opts.defaults.Model, opts.defaults.Provider = opts.model.name, opts.model.provider
	noteLeftovers(ctx, d, opts.out)
	progress, finish := d.startProgress(opts, s.runID, queue, a != nil)
	endpoint, err := opts.model.endpoint(opts.concurrency, progress.Endpoint)
	if err != nil {
		return err
	}
	defer endpoint.Close()
	deps := s.deps(d, &opts.model, endpoint)
	deps.Getenv, deps.Ask, deps.Approve, deps.Progress = d.getenv, a.ask(), a.approver(), progress
	sum, err := batch.Run(ctx, queue, batch.Options{
		Concurrency: opts.concurrency, RunBudgetUSD: opts.runBudget, Force: opts.force, RunID: s.runID,
		Defaults: opts.defaults, Agent: opts.model.agentConfig(), Policy: opts.policy.policy,
		EnvironmentCacheLimit: envLimit,
	}, deps)
	progress.stop()
	s.end(ctx, d, "the run's sandboxes") // whatever happened, no sandbox of this run outlives it
	onForcedExit(ctx, nil)
	index := finish(context.WithoutCancel(ctx), sum, err)
	if err != nil {
		return configErr(err)
	}
	switch {
	case opts.events:
	case d.globals.json:
		if err := d.printer.JSON(sum); err != nil {
			return err
		}
	default:
		printSummary(d.printer, sum, opts.out, index)
	}
	switch {
	case len(sum.Unrecorded) > 0:
		return fmt.Errorf("the results of %s could not be written to %s; their branches may exist, and a rerun with the same --out runs them again",
			strings.Join(sum.Unrecorded, ", "), opts.out)
	case ctx.Err() != nil:
		return cli.ErrInterrupted
	case sum.Failed() > 0:
		return &cli.ExitError{Code: cli.ExitFailure}
	}
	return nil
}

// configErr makes a problem found before anything ran exit with code 2.
func configErr(err error) error {
	if errors.Is(err, batch.ErrConfig) || errors.Is(err, tasks.ErrLocked) || errors.Is(err, tasks.ErrShardMismatch) {
		return &cli.ExitError{Code: cli.ExitUsage, Err: err}
	}
	return err
}

// printSummary prints one line per task and the run's totals.
func printSummary(p *cli.Printer, sum batch.Summary, out, index string) {
	p.Heading("%-24s %-16s %9s %6s %7s %10s  %s", "TASK", "STATUS", "COST", "BUDGET", "STEPS", "TIME", "BRANCH")
	for _, r := range sum.Results {
		branch := r.Branch
		if r.Commit == "" {
			branch = "-"
		} else {
			branch += " " + r.Commit[:min(10, len(r.Commit))]
		}
		share := "-" // the share of the task's budget spent
		if r.BudgetUSD > 0 {
			share = fmt.Sprintf("%.0f%%", 100*r.BudgetShare)
		}
		p.Line("%-24s %-16s %9s %6s %7d %10s  %s", clip(r.ID, 24), r.Status, fmt.Sprintf("$%.4f", r.CostUSD), share, r.Steps,
			time.Duration(r.Duration).Round(time.Second), branch)
	}
	s := sum.Spend
	p.Line("")
	p.Line("%d task(s): %d succeeded, %d not, %d skipped as already finished", len(sum.Results),
		len(sum.Results)-sum.Failed(), sum.Failed(), sum.Skipped)
	p.Line("spent $%.4f in %d model call(s): %d tokens in (%d cached), %d out", s.SpentUSD, s.Calls,
		s.PromptTokens, s.CachedTokens, s.CompletionTokens)
	if s.CapUSD != nil && s.CapShare != nil {
		p.Line("run budget: $%.4f of $%.4f spent (%.1f%%)", s.SpentUSD, *s.CapUSD, 100**s.CapShare)
	}
	p.Line("results: %s/results.jsonl", strings.TrimSuffix(out, "/"))
	if index != "" {
		p.Line("report: %s", index)
	}
}

func clip(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[:n-1] + "…"
}

// attended is the person at the terminal of an exec: they answer the
// agent's questions and, with approve, allow or refuse each call. A nil
// *attended is an unattended run.
type attended struct {
	console *attend.Console
	approve bool
}

func (a *attended) ask() func(context.Context, string) (string, error) {
	if a == nil {
		return nil
	}
	return a.console.Ask
}

func (a *attended) approver() func(context.Context, agent.ApprovalRequest) (agent.Approval, error) {
	if a == nil || !a.approve {
		return nil
	}
	return a.console.Approve
}
