package main

import (
	"context"
	"io"
	"log/slog"
	"strings"

	"github.com/spf13/cobra"

	"github.com/runner-dev/runner/internal/cli"
	"github.com/runner-dev/runner/sandbox"
	"github.com/runner-dev/runner/sandbox/docker"
)

// deps is what the commands share: the process's streams and environment,
// and, once the global flags are parsed, the printer and the logger. Tests
// build one around buffers; commands reach the engine only through connect.
type deps struct {
	stdin          io.Reader
	stdout, stderr io.Writer
	getenv         func(string) string
	// connect opens the sandbox backend the flags choose (the Docker
	// engine named by the environment: DOCKER_HOST..., or a Kubernetes
	// cluster) and logs it; the caller closes it.
	connect func(ctx context.Context, log *slog.Logger, b *backendFlags, getenv func(string) string) (sandbox.Backend, error)

	globals globalFlags
	// backend is set by the flags of the commands that start sandboxes
	// (and by a task file's backend:).
	backend backendFlags
	// Set by setup, before a command's RunE runs.
	printer *cli.Printer
	log     *slog.Logger
	// started is set when a command begins to run: an error returned before
	// that is cobra refusing the command line.
	started bool
}

// globalFlags are the flags every command accepts.
type globalFlags struct {
	logLevel string
	json     bool
	noColor  bool
}

func newDeps(stdin io.Reader, stdout, stderr io.Writer, getenv func(string) string) *deps {
	return &deps{stdin: stdin, stdout: stdout, stderr: stderr, getenv: getenv, connect: connectBackend}
}

// setup builds the printer and the logger from the global flags and the
// environment. A bad log level is a usage error.
func (d *deps) setup() error {
	level := d.globals.logLevel
	if level == "" {
		level = d.getenv("RUNNER_LOG_LEVEL")
	}
	if level == "" {
		level = "warn"
	}
	var lv slog.Level
	if err := lv.UnmarshalText([]byte(level)); err != nil {
		return cli.Usagef("log level %q: want debug, info, warn or error", level)
	}
	d.log = slog.New(cli.NewLogHandler(d.stderr, lv))
	slog.SetDefault(d.log)
	d.printer = cli.NewPrinter(d.stdout, d.stderr, cli.PrinterOptions{NoColor: d.globals.noColor, Getenv: d.getenv})
	return nil
}

// engine connects to the sandbox backend; the caller closes it.
func (d *deps) engine(ctx context.Context) (sandbox.Backend, error) {
	if err := d.backend.check(); err != nil {
		return nil, err
	}
	return d.connect(ctx, d.log, &d.backend, d.getenv)
}

// connectBackend is the one place that picks the sandbox backend: the
// Docker engine of the environment, or the Kubernetes cluster of the
// kubeconfig when b says so.
func connectBackend(ctx context.Context, log *slog.Logger, b *backendFlags, getenv func(string) string) (sandbox.Backend, error) {
	if b.kubernetes() {
		return connectKubernetes(ctx, log, b, getenv)
	}
	e, err := docker.Connect(ctx)
	if err != nil {
		return nil, err
	}
	log.Debug("connected to the Docker engine", "host", e.Host())
	if err := useChannel(e, log); err != nil {
		e.Close()
		return nil, err
	}
	return e, nil
}

// subcommands are runner's commands, in the order help lists them. The run
// and exec commands (newRunCmd, newExecCmd) belong at the top of this list.
// Each command does its work in RunE: newRootCmd wraps every RunE so that
// the printer and the logger are set up first, and so that an error before
// it counts as a usage error. No command needs a PersistentPreRun of its own.
func subcommands(d *deps) []*cobra.Command {
	return []*cobra.Command{
		newRunCmd(d, nil),
		newExecCmd(d, nil),
		newContinueCmd(d, nil),
		newValidateCmd(d, nil),
		newReportCmd(d, nil),
		newShowCmd(d, nil),
		newMergeCmd(d, nil),
		newImageCmd(d),
		newDoctorCmd(d, nil),
		newCleanupCmd(d, nil),
		newCacheCmd(d),
		newRollbackCmd(d, nil),
		newVersionCmd(d, nil),
	}
}

const rootLong = `runner runs an LLM coding agent unattended on a queue of tasks. Each task
runs in a hardened, disposable Docker container, spends against a USD budget,
and leaves its result as a new git branch: your branch, index and worktree
are never touched, so rolling back is deleting a branch.

Exit codes:
  0    success
  1    an operation failed, or a task did not succeed
  2    usage or configuration error: bad flag, invalid task file,
       Docker daemon unreachable, sandbox image missing
  130  interrupted (SIGINT or SIGTERM)

Environment:
  DOCKER_HOST, DOCKER_TLS_VERIFY, DOCKER_CERT_PATH, DOCKER_API_VERSION
                      the Docker engine to use (local socket by default;
                      tcp:// and ssh:// engines work too)
  KUBECONFIG          the cluster of --backend kubernetes (else ~/.kube/config,
                      else the pod's service account when runner runs in one)
  RUNNER_POD_NAME, RUNNER_POD_UID
                      the pod runner runs in (downward API): the cluster then
                      collects its sandbox pods if runner dies
  RUNNER_LOG_LEVEL    default of --log-level
  JOB_COMPLETION_INDEX
                      the shard's index for run --shard auto/N (a
                      Kubernetes Indexed Job sets it)
  NO_COLOR            when set, no colour in the output
  RUNNER_GIT_TOKEN, GITHUB_TOKEN
                      token for https remotes (RUNNER_GIT_TOKEN first)`

// newRootCmd builds the runner command and its subcommands.
func newRootCmd(d *deps) *cobra.Command {
	root := &cobra.Command{
		Use:           "runner",
		Short:         "Run an LLM coding agent on a queue of tasks, each in a Docker sandbox",
		Long:          rootLong,
		Version:       versionLine(),
		SilenceErrors: true,
		SilenceUsage:  true,
	}
	root.SetIn(d.stdin)
	root.SetOut(d.stdout)
	root.SetErr(d.stderr)
	root.SetVersionTemplate("{{.Version}}\n")
	pf := root.PersistentFlags()
	pf.StringVar(&d.globals.logLevel, "log-level", "", "log `level` on stderr: debug, info, warn or error (default $RUNNER_LOG_LEVEL, else warn)")
	pf.BoolVar(&d.globals.json, "json", false, "machine-readable JSON output, where a command supports it")
	pf.BoolVar(&d.globals.noColor, "no-color", false, "no colour in the output (also when NO_COLOR is set)")
	root.AddCommand(subcommands(d)...)
	markStart(root, d)
	return root
}

// markStart wraps the RunE of cmd and of all its subcommands so that d
// knows when cobra has accepted the command line, and sets d up first.
func markStart(cmd *cobra.Command, d *deps) {
	if run := cmd.RunE; run != nil {
		cmd.RunE = func(c *cobra.Command, args []string) error {
			d.started = true
			if err := d.setup(); err != nil {
				return err
			}
			return run(c, args)
		}
	}
	for _, sub := range cmd.Commands() {
		markStart(sub, d)
	}
}

// jsonUnsupported refuses --json for a command that has no JSON output.
func (d *deps) jsonUnsupported(cmd *cobra.Command) error {
	if d.globals.json {
		return cli.Usagef("%s has no JSON output", strings.TrimPrefix(cmd.CommandPath(), "runner "))
	}
	return nil
}
