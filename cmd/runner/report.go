package main

import (
	"context"

	"github.com/spf13/cobra"

	runreport "github.com/runner-dev/runner/internal/report"
)

// reportOptions are the flags of `runner report`.
type reportOptions struct {
	out string
	to  string
}

const reportLong = `Write the HTML report of an out directory: an index of the run (counts by
status, spend, tokens, the slowest and most expensive tasks, and a table of
the tasks that sorts and filters) and a page per task (why it ended, its
branch's diff, the check's output, the questions asked, and its trajectory
as a timeline).

runner run writes the report at OUT/report/ by itself, and refreshes it as
tasks end; this command writes it again, for instance beside a run that
still goes on or after upgrading runner. The report is static and
self-contained: it loads nothing from the network and opens from file://
or as a CI artifact.`

func newReportCmd(d *deps, runF func(context.Context, *reportOptions) error) *cobra.Command {
	opts := &reportOptions{}
	cmd := &cobra.Command{
		Use:     "report OUT",
		Short:   "Write the HTML report of a run's out directory",
		Long:    reportLong,
		Example: "  runner report runs/today\n  runner report runs/today --to /tmp/today-report",
		Args:    cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			if err := d.jsonUnsupported(cmd); err != nil {
				return err
			}
			opts.out = args[0]
			if runF != nil {
				return runF(cmd.Context(), opts)
			}
			return writeReport(cmd.Context(), d, opts)
		},
	}
	cmd.Flags().StringVar(&opts.to, "to", "", "write the report to this `directory` (default OUT/report)")
	return cmd
}

func writeReport(ctx context.Context, d *deps, opts *reportOptions) error {
	ropt := runreport.Options{To: opts.to, Version: readBuildInfo().Version}
	if err := runreport.Write(ctx, opts.out, ropt); err != nil {
		return err
	}
	d.printer.Success("report: %s", ropt.Index(opts.out))
	return nil
}
