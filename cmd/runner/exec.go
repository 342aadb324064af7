package main

import (
	"context"
	"io"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/spf13/cobra"
	"golang.org/x/term"

	"github.com/runner-dev/runner/internal/attend"
	"github.com/runner-dev/runner/internal/cli"
	"github.com/runner-dev/runner/internal/policy"
	"github.com/runner-dev/runner/tasks"
)

// execOptions are the flags of `runner exec`: one task, from flags.
type execOptions struct {
	runOptions
	repo, ref, branch, id, check string
	checkRetries                 int
	network                      string
	approve                      bool
}

const execLong = `Run one task given on the command line: the quick path for a one-off run.

  runner exec --repo . "Fix the failing test in parser_test.go"

The result is a branch (agent/<id>) in the repository, as with runner run.
When stdin is a terminal, the agent's questions are asked there; otherwise
the run is unattended. With --approve (a terminal is needed), each command
and file change the task's policy allows is shown first (a diff for file
changes) and runs only if you say yes: y runs it, n refuses it with a
reason the agent reads, a allows that tool from then on, p allows simple
commands (no shell operators) that start with a prefix. Ctrl-C at the
question ends the task.`

func newExecCmd(d *deps, runF func(context.Context, *execOptions, string) error) *cobra.Command {
	opts := &execOptions{}
	cmd := &cobra.Command{
		Use:   "exec --repo PATH|URL PROMPT",
		Short: "Run one task given by flags",
		Long:  execLong,
		Args:  cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			if err := opts.complete(d.getenv); err != nil {
				return err
			}
			if runF != nil {
				return runF(cmd.Context(), opts, args[0])
			}
			return execTask(cmd.Context(), d, opts, args[0])
		},
	}
	f := cmd.Flags()
	f.StringVar(&opts.repo, "repo", "", "repository: a local path or a URL (required)")
	f.StringVar(&opts.ref, "ref", "", "branch, tag or commit to start from (default the repository's HEAD)")
	f.StringVar(&opts.branch, "branch", "", "branch to leave the result on (default agent/<id>)")
	f.StringVar(&opts.id, "id", "", "task id (default exec-<time>)")
	f.StringVar(&opts.check, "check", "", "shell command that must pass in the sandbox for the task to succeed")
	f.IntVar(&opts.checkRetries, "check-retries", 2, "more tries the agent gets after a failing check")
	f.StringVar(&opts.network, "network", "none", "sandbox network: none or bridge")
	f.BoolVar(&opts.approve, "approve", false, "ask on the terminal before each command and file change runs")
	f.StringVarP(&opts.out, "out", "o", "runner-out", "out `directory` for results.jsonl and trajectories")
	f.BoolVar(&opts.force, "force", false, "overwrite the branch if it already exists")
	f.Float64Var(&opts.runBudget, "run-budget", 0, "")
	f.MarkHidden("run-budget")
	opts.concurrency = 1
	addTaskDefaultFlags(cmd, &opts.defaults)
	opts.model.register(cmd)
	opts.policy.register(cmd)
	d.backend.register(cmd)
	cmd.MarkFlagRequired("repo")
	return cmd
}

// execTask builds the task from the flags and runs it.
func execTask(ctx context.Context, d *deps, opts *execOptions, prompt string) error {
	if strings.TrimSpace(prompt) == "" {
		return cli.Usagef("the prompt is empty")
	}
	id := opts.id
	if id == "" {
		id = "exec-" + time.Now().UTC().Format("20060102-150405")
	}
	if err := tasks.CheckID(id); err != nil {
		return cli.Usagef("--id: %v", err)
	}
	branch := opts.branch
	if branch == "" {
		branch = "agent/" + id
	}
	if err := tasks.CheckBranchName(branch); err != nil {
		return cli.Usagef("--branch: %v", err)
	}
	if opts.network != string(tasks.NetworkNone) && opts.network != string(tasks.NetworkBridge) {
		return cli.Usagef("--network %q: want none or bridge", opts.network)
	}
	repo := opts.repo
	if !tasks.IsRemote(repo) {
		abs, err := filepath.Abs(repo)
		if err != nil {
			return cli.Usagef("--repo: %v", err)
		}
		repo = abs
	}
	t := tasks.Task{
		ID: id, Repo: repo, Ref: opts.ref, Prompt: prompt, Branch: branch, Check: opts.check,
		CheckRetries: opts.checkRetries, Network: tasks.Network(opts.network),
		Policy:  policy.Policy{Protected: policy.DefaultProtected},
		Exclude: slices.Clone(tasks.DefaultExclude),
	}
	interactive := cli.IsTerminal(d.stdout) && isTerminalReader(d.stdin)
	if opts.approve && !interactive {
		return cli.Usagef("--approve asks on a terminal: stdin and stdout must be one")
	}
	var a *attended
	if interactive {
		a = &attended{console: attend.NewConsole(d.stdin, d.printer), approve: opts.approve}
	}
	return runQueue(ctx, d, &opts.runOptions, []tasks.Task{t}, a)
}

// isTerminalReader reports whether r is a terminal.
func isTerminalReader(r io.Reader) bool {
	f, ok := r.(interface{ Fd() uintptr })
	return ok && term.IsTerminal(int(f.Fd()))
}
