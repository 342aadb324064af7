package main

import (
	"context"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"

	"github.com/spf13/cobra"

	"github.com/runner-dev/runner/gitops"
	"github.com/runner-dev/runner/internal/cli"
	runreport "github.com/runner-dev/runner/internal/report"
	"github.com/runner-dev/runner/tasks"
)

// showOptions are the flags of `runner show`.
type showOptions struct {
	out, id    string
	attempt    int
	try        int
	trajectory bool
}

const showLong = `Print one task of an out directory for a terminal: its status and why,
cost, branch, the agent's summary and questions, then the diff stat and the
diff of its branch. With --trajectory, the agent's run turn by turn instead
of the diff: each model call with its cost and tokens, the tool calls and
their results, retries, compactions and policy refusals.

The latest attempt is shown unless --attempt says another. A task run as
best of n lists its attempts; --try K shows attempt K's own work. When stdout is a
terminal the text goes through $PAGER (less by default). Everything that
came from the agent or a repository is printed with control characters
escaped.`

func newShowCmd(d *deps, runF func(context.Context, *showOptions) error) *cobra.Command {
	opts := &showOptions{}
	cmd := &cobra.Command{
		Use:     "show OUT ID",
		Short:   "Print one task of a run: status, cost, summary and diff, or its trajectory",
		Long:    showLong,
		Example: "  runner show runs/today fix-typo\n  runner show runs/today fix-typo --trajectory",
		Args:    cobra.ExactArgs(2),
		RunE: func(cmd *cobra.Command, args []string) error {
			if err := d.jsonUnsupported(cmd); err != nil {
				return err
			}
			opts.out, opts.id = args[0], args[1]
			if runF != nil {
				return runF(cmd.Context(), opts)
			}
			return showTask(cmd.Context(), d, opts)
		},
	}
	f := cmd.Flags()
	f.BoolVar(&opts.trajectory, "trajectory", false, "show the agent's run turn by turn instead of the diff")
	f.IntVar(&opts.attempt, "attempt", 0, "show this attempt (default the latest)")
	f.IntVar(&opts.try, "try", 0, "of a task run as best of n: show this attempt `K` of it")
	return cmd
}

// showLimits bound the diff `runner show` prints: more than the report
// shows, since a pager scrolls.
var showLimits = gitops.DiffLimits{MaxFileBytes: 1 << 20, MaxFileLines: 20000, MaxLines: 100000}

func showTask(ctx context.Context, d *deps, opts *showOptions) error {
	if err := tasks.CheckID(opts.id); err != nil {
		return cli.Usagef("%v", err)
	}
	run, err := runreport.Load(opts.out, nil)
	if err != nil {
		return err
	}
	t := run.Task(opts.id)
	if t == nil || len(t.Attempts) == 0 {
		return fmt.Errorf("task %s has no result in %s", opts.id, filepath.Join(opts.out, tasks.ResultsFile))
	}
	r := t.Latest()
	if opts.attempt != 0 {
		found := false
		for _, a := range t.Attempts {
			if a.Attempt == opts.attempt {
				r, found = a, true
			}
		}
		if !found {
			return fmt.Errorf("task %s has no attempt %d in %s (it has %d)", opts.id, opts.attempt,
				filepath.Join(opts.out, tasks.ResultsFile), len(t.Attempts))
		}
	}
	if opts.try != 0 {
		if r, err = showTry(t, r, opts); err != nil {
			return err
		}
	}
	a := runreport.ReadAttempt(ctx, opts.out, r, showLimits)
	w, done := d.pager()
	err = runreport.WriteText(w, a, runreport.TextOptions{Color: d.printer.Color(), Trajectory: opts.trajectory, Of: len(t.Attempts)})
	if derr := done(); err == nil {
		err = derr
	}
	return err
}

// pager returns where to write text a person reads: the standard input of
// $PAGER (less by default, with LESS=FRX unless LESS is set) when stdout
// is a terminal, stdout otherwise. done waits for the pager to end; a
// pager quit before the end of the text is not an error.
func (d *deps) pager() (w io.Writer, done func() error) {
	direct := func() error { return nil }
	if !d.printer.Terminal() {
		return d.stdout, direct
	}
	command := d.getenv("PAGER")
	if command == "" {
		if _, err := exec.LookPath("less"); err != nil {
			return d.stdout, direct
		}
		command = "less"
	}
	if command == "cat" {
		return d.stdout, direct
	}
	cmd := exec.Command("sh", "-c", command)
	cmd.Stdout, cmd.Stderr = d.stdout, d.stderr
	cmd.Env = os.Environ()
	if d.getenv("LESS") == "" {
		cmd.Env = append(cmd.Env, "LESS=FRX")
	}
	in, err := cmd.StdinPipe()
	if err != nil {
		return d.stdout, direct
	}
	if err := cmd.Start(); err != nil {
		d.printer.Warn("pager %q: %v", command, err)
		return d.stdout, direct
	}
	return ignoreClosed{in}, func() error {
		in.Close()
		cmd.Wait() // the pager's exit status is the person's business
		return nil
	}
}

// ignoreClosed is a pager's input: once the pager quits, what is left of
// the text is dropped.
type ignoreClosed struct{ w io.Writer }

func (i ignoreClosed) Write(p []byte) (int, error) {
	i.w.Write(p)
	return len(p), nil
}
