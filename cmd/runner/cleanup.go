package main

import (
	"context"
	"time"

	"github.com/spf13/cobra"

	"github.com/runner-dev/runner/internal/cli"
	"github.com/runner-dev/runner/sandbox"
)

type cleanupOptions struct {
	printer *cli.Printer
	json    bool
	engine  func(context.Context) (sandbox.Backend, error)
	dryRun  bool
}

func newCleanupCmd(d *deps, runF func(context.Context, *cleanupOptions) error) *cobra.Command {
	opts := &cleanupOptions{}
	cmd := &cobra.Command{
		Use:   "cleanup",
		Short: "Remove the sandbox containers left behind by dead runs",
		Long: `Remove the sandbox containers whose run is over: those whose owner process
on this host is dead, those past their deadline (a task's lifetime, so even
a run on another host is cleaned up in the end), and stopped ones whose
labels were damaged. The containers of a live run are never touched. The
egress proxies of tasks with an allowlist are among these containers; their
internal networks are removed too, by the same rules.

A run removes its own containers, even on Ctrl-C; cleanup is for a runner
that was killed (SIGKILL, a crash, a reboot). With --dry-run, list what would
be removed and remove nothing (it lists containers, not networks). With --json, print {"dry_run", "removed",
"kept"}.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			opts.printer, opts.json, opts.engine = d.printer, d.globals.json, d.engine
			if runF != nil {
				return runF(cmd.Context(), opts)
			}
			return runCleanup(cmd.Context(), opts)
		},
	}
	cmd.Flags().BoolVarP(&opts.dryRun, "dry-run", "n", false, "list what would be removed, remove nothing")
	d.backend.register(cmd)
	return cmd
}

func runCleanup(ctx context.Context, opts *cleanupOptions) error {
	e, err := opts.engine(ctx)
	if err != nil {
		return err
	}
	defer e.Close()
	rep, err := e.Cleanup(ctx, opts.dryRun)
	if perr := printCleanup(opts, rep); perr != nil {
		return perr
	}
	return err
}

// leftoverView is a sandbox container as --json shows it.
type leftoverView struct {
	ID       string    `json:"id"`
	Name     string    `json:"name"`
	Run      string    `json:"run"`
	Task     string    `json:"task"`
	State    string    `json:"state"`
	Host     string    `json:"owner_host"`
	PID      int       `json:"owner_pid"`
	Deadline time.Time `json:"deadline"`
	Why      string    `json:"why,omitempty"`
}

func leftoverViews(ls []sandbox.Leftover) []leftoverView {
	out := make([]leftoverView, 0, len(ls))
	for _, l := range ls {
		out = append(out, leftoverView{
			ID: l.ID, Name: l.Name, Run: l.Run, Task: l.Task, State: l.State,
			Host: l.Owner.Host, PID: l.Owner.PID, Deadline: l.Deadline, Why: l.Why,
		})
	}
	return out
}

func printCleanup(opts *cleanupOptions, rep sandbox.CleanupReport) error {
	p := opts.printer
	if opts.json {
		return p.JSON(struct {
			DryRun  bool           `json:"dry_run"`
			Removed []leftoverView `json:"removed"`
			Kept    []leftoverView `json:"kept"`
		}{opts.dryRun, leftoverViews(rep.Removed), leftoverViews(rep.Kept)})
	}
	verb := "removed"
	if opts.dryRun {
		verb = "would remove"
	}
	for _, l := range rep.Removed {
		p.Line("%s %s (task %q of run %s, %s): %s", verb, l.Name, l.Task, l.Run, l.State, l.Why)
	}
	switch {
	case len(rep.Removed) == 0 && opts.dryRun:
		p.Line("nothing to remove")
	case len(rep.Removed) == 0:
		p.Line("nothing removed")
	}
	if len(rep.Kept) > 0 {
		p.Line("kept %s of live runs", plural(len(rep.Kept), "container"))
	}
	return nil
}
