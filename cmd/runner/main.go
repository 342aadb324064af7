// Command runner runs an LLM coding agent unattended on a queue of tasks,
// each in a hardened Docker sandbox, within a USD budget, and leaves each
// result as a git branch.
package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"

	"github.com/spf13/cobra"

	"github.com/runner-dev/runner/internal/cli"
	"github.com/runner-dev/runner/internal/egress"
	"github.com/runner-dev/runner/internal/termsafe"
	"github.com/runner-dev/runner/sandbox/channel"
	"github.com/runner-dev/runner/sandbox/egressprobe"
)

func main() {
	os.Exit(Main(os.Args[1:], os.Stdin, os.Stdout, os.Stderr))
}

// Main runs the runner command line with args (without the program name)
// and returns the exit code; see the cli package for their meaning. SIGINT
// and SIGTERM cancel the command's context; a second one exits at once.
//
// "runner egress-proxy" is not a command for people: it is the egress
// proxy that a sandbox with an allowlist runs in a container of its own
// (see package egress), and it is left out of the help. Nor is "runner
// sandbox-channel": the helper each sandbox runs to serve its commands and
// file operations over one stream (see package sandbox/channel), nor
// "runner egress-probe", which a sandbox of the Kubernetes backend runs to
// prove it has no egress (see package sandbox/egressprobe).
func Main(args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	if len(args) > 0 && args[0] == "egress-proxy" {
		return egress.Main(args[1:], stdout, stderr)
	}
	if len(args) > 0 && args[0] == channel.Subcommand {
		return channel.Main(stdin, stdout, stderr)
	}
	if len(args) > 0 && args[0] == egressprobe.Subcommand {
		return egressprobe.Main(args[1:])
	}
	ctx, stop := signalContext(context.Background())
	defer stop()
	d := newDeps(stdin, stdout, stderr, os.Getenv)
	root := newRootCmd(d)
	root.SetArgs(args)
	cmd, err := root.ExecuteContextC(ctx)
	if err == nil {
		return cli.ExitOK
	}
	if errors.Is(context.Cause(ctx), cli.ErrInterrupted) {
		err = fmt.Errorf("%w: %w", cli.ErrInterrupted, err)
	}
	if !d.started {
		// Cobra refused the command line before any command ran.
		err = &cli.UsageError{Err: err}
	}
	return report(stderr, cmd, err)
}

// report prints err as `runner: <error>`, then a hint line when one
// applies, then the usage of cmd for a usage error, and returns the exit
// code for err.
func report(w io.Writer, cmd *cobra.Command, err error) int {
	code := cli.Code(err)
	var exit *cli.ExitError
	if errors.As(err, &exit) && exit.Err == nil {
		return code
	}
	lines := cli.ErrorLines(err) // escaped: errors carry paths and texts of the agent's
	if errors.Is(err, cli.ErrInterrupted) {
		lines = []string{"interrupted"}
	}
	var b strings.Builder
	b.WriteString("runner: " + strings.Join(lines, "\n") + "\n")
	if hint := cli.Hint(err); hint != "" {
		b.WriteString("hint: " + termsafe.Escape(hint) + "\n")
	}
	io.WriteString(w, b.String())
	var usage *cli.UsageError
	if errors.As(err, &usage) && cmd != nil {
		fmt.Fprintf(w, "\n%s", cmd.UsageString())
	}
	return code
}
