package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"

	"github.com/spf13/cobra"

	"github.com/runner-dev/runner/gitops"
	"github.com/runner-dev/runner/internal/cli"
	"github.com/runner-dev/runner/tasks"
)

type rollbackOptions struct {
	printer *cli.Printer
	json    bool
	auth    gitops.Credentials
	dryRun  bool

	// From a run's out directory: the branches of ids, or of every task.
	out string
	ids []string
	all bool

	// Directly: one branch of one repository, and of its remote if given.
	repo, branch, remote string
}

func newRollbackCmd(d *deps, runF func(context.Context, *rollbackOptions) error) *cobra.Command {
	opts := &rollbackOptions{}
	cmd := &cobra.Command{
		Use:   "rollback (--out DIR (--all | TASK-ID...) | --repo PATH --branch NAME [--remote URL])",
		Short: "Delete the branches a run created",
		Long: `Delete result branches, undoing what a run left behind. The user's HEAD,
index and worktree are never touched, and the branch HEAD points to is
refused.

With --out, read the results of the run recorded in DIR/results.jsonl and
delete the branch of each task named, or of every task with --all (never
implied: deleting every branch of a run takes asking for it). Only the
branches of results that record a commit are deleted; a task that committed
nothing made no branch, and one of that name is someone else's. A branch
pushed to a remote repository (a URL) is deleted from that remote; a branch
of a URL repository that was never pushed existed only in the run's
temporary clone, so there is nothing to delete. While a run is using DIR,
rollback refuses it.

With --repo and --branch, delete that branch of that local repository, and
from the repository at --remote first when given.

The branch's reflog goes with it, as with git branch -D, and so does the
pack its commit added to the repository once nothing else (a ref, a
worktree's HEAD, a reflog, an index, a stash) reaches any of its objects:
a commit you merged or cherry-picked keeps it.

Deleting a branch that is already gone counts as done, so rollback can be
repeated. Remotes over https use the token in RUNNER_GIT_TOKEN or, failing
that, GITHUB_TOKEN; ssh remotes use the keys of the running ssh-agent. With
--json, print {"dry_run", "branches": [{"tasks", "repo", "branch", "action",
...}]}.`,
		Example: `  runner rollback --out out --all
  runner rollback --out out fix-typo flaky-login-test
  runner rollback --repo ~/src/app --branch agent/fix-typo`,
		RunE: func(cmd *cobra.Command, args []string) error {
			opts.printer, opts.json, opts.ids = d.printer, d.globals.json, args
			opts.auth = gitops.Credentials{Token: firstSet(d.getenv, "RUNNER_GIT_TOKEN", "GITHUB_TOKEN")}
			if err := opts.check(); err != nil {
				return err
			}
			if runF != nil {
				return runF(cmd.Context(), opts)
			}
			return runRollback(cmd.Context(), opts)
		},
	}
	f := cmd.Flags()
	f.StringVar(&opts.out, "out", "", "out `directory` of a run, holding results.jsonl")
	f.BoolVar(&opts.all, "all", false, "with --out: the branches of every task of the run")
	f.StringVar(&opts.repo, "repo", "", "`path` of a local repository")
	f.StringVar(&opts.branch, "branch", "", "with --repo: the branch `name` to delete")
	f.StringVar(&opts.remote, "remote", "", "with --repo: also delete the branch from this remote `URL` (or path)")
	f.BoolVarP(&opts.dryRun, "dry-run", "n", false, "list what would be deleted, delete nothing")
	cmd.MarkFlagsOneRequired("out", "repo")
	cmd.MarkFlagsMutuallyExclusive("out", "repo")
	cmd.MarkFlagsRequiredTogether("repo", "branch")
	return cmd
}

// check refuses the combinations of arguments the flag groups cannot
// express.
func (o *rollbackOptions) check() error {
	switch {
	case o.out != "" && o.all && len(o.ids) > 0:
		return cli.Usagef("give task ids or --all, not both")
	case o.out != "" && !o.all && len(o.ids) == 0:
		return cli.Usagef("name the tasks whose branches to delete, or give --all for every task of the run")
	case o.repo != "" && (o.all || len(o.ids) > 0):
		return cli.Usagef("task ids and --all go with --out, not --repo")
	case o.out != "" && o.remote != "":
		return cli.Usagef("--remote goes with --repo; with --out the remote comes from the results")
	}
	return nil
}

func firstSet(getenv func(string) string, names ...string) string {
	for _, n := range names {
		if v := getenv(n); v != "" {
			return v
		}
	}
	return ""
}

func runRollback(ctx context.Context, opts *rollbackOptions) error {
	var plan []rollbackTarget
	if opts.out != "" {
		results, err := readResults(opts.out, opts.printer)
		if err != nil {
			return err
		}
		if plan, err = planRollback(results, opts.ids); err != nil {
			return err
		}
	} else {
		plan = []rollbackTarget{{Repo: opts.repo, Branch: opts.branch, Remote: opts.remote}}
	}
	outcomes := make([]rollbackOutcome, len(plan))
	failed := 0
	for i, t := range plan {
		outcomes[i] = t.apply(ctx, opts.auth, opts.dryRun)
		if outcomes[i].Action == actionFailed {
			failed++
		}
	}
	if err := printRollback(opts, outcomes); err != nil {
		return err
	}
	if failed > 0 {
		return fmt.Errorf("rollback: %d of %s not deleted", failed, plural(len(plan), "branch"))
	}
	return nil
}

// readResults reads the results recorded in the out directory dir. It
// takes the directory's lock, as a run does, so that it never reads a run
// that is still writing; it refuses a directory with no results.jsonl
// rather than create one.
func readResults(dir string, p *cli.Printer) ([]tasks.Result, error) {
	if _, err := os.Stat(filepath.Join(dir, tasks.ResultsFile)); errors.Is(err, os.ErrNotExist) {
		return nil, cli.Usagef("%s is not the out directory of a run: it has no %s", dir, tasks.ResultsFile)
	} else if err != nil {
		return nil, fmt.Errorf("read results: %w", err)
	}
	store, err := tasks.OpenStore(dir)
	if err != nil {
		return nil, fmt.Errorf("read results: %w", err)
	}
	defer store.Close()
	for _, w := range store.Warnings() {
		p.Warn("%s", w)
	}
	return store.Results(), nil
}

// planRollback picks the branches to delete from a run's results: those of
// the tasks ids (every task when ids is empty) that hold a commit of the
// run, each (repository, branch) once, in the order first recorded. A task
// id with no result is a usage error.
func planRollback(results []tasks.Result, ids []string) ([]rollbackTarget, error) {
	var missing []string
	for _, id := range ids {
		if !slices.ContainsFunc(results, func(r tasks.Result) bool { return r.ID == id }) {
			missing = append(missing, id)
		}
	}
	if len(missing) > 0 {
		return nil, cli.Usagef("no result recorded for %s %q", pluralWord(len(missing), "task"), missing)
	}
	var plan []rollbackTarget
	index := map[[2]string]int{}
	for _, r := range results {
		if len(ids) > 0 && !slices.Contains(ids, r.ID) || r.Branch == "" || r.Commit == "" {
			continue
		}
		key := [2]string{r.Repo, r.Branch}
		i, ok := index[key]
		if !ok {
			i = len(plan)
			index[key] = i
			plan = append(plan, rollbackTarget{Repo: r.Repo, Branch: r.Branch, FromResults: true})
		}
		t := &plan[i]
		if !slices.Contains(t.Tasks, r.ID) {
			t.Tasks = append(t.Tasks, r.ID)
		}
		t.Pushed = t.Pushed || r.Pushed
		t.Commit = r.Commit // results are in the order they were written
	}
	return plan, nil
}
