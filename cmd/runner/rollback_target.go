package main

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/runner-dev/runner/gitops"
	"github.com/runner-dev/runner/internal/cli"
	"github.com/runner-dev/runner/internal/redact"
	"github.com/runner-dev/runner/tasks"
)

// rollbackTarget is one branch to delete.
type rollbackTarget struct {
	// Tasks whose results name the branch; empty for a direct rollback.
	Tasks []string
	// Repo is the repository of the results (a local path or a URL), or
	// the local repository of a direct rollback.
	Repo   string
	Branch string
	// Pushed: some result says the branch was pushed.
	Pushed bool
	// FromResults: the target comes from a run's results, not --repo.
	FromResults bool
	// Remote, for a direct rollback, is deleted from before Repo.
	Remote string
	// Commit is where the run left the branch (the latest result's);
	// a local branch that has moved since is not deleted.
	Commit string
}

// What became of a target.
const (
	actionDeleted     = "deleted"
	actionWouldDelete = "would_delete"
	actionSkipped     = "skipped"
	actionFailed      = "failed"
)

// rollbackOutcome is what rollback did with one target.
type rollbackOutcome struct {
	Tasks  []string `json:"tasks"`
	Repo   string   `json:"repo"`
	Branch string   `json:"branch"`
	// Remote is where the branch was (or would be) deleted remotely.
	Remote string `json:"remote,omitempty"`
	Action string `json:"action"`
	Note   string `json:"note,omitempty"`
	Error  string `json:"error,omitempty"`
	err    error
}

// apply deletes the target's branch, or says what it would delete.
func (t rollbackTarget) apply(ctx context.Context, auth gitops.Credentials, dryRun bool) rollbackOutcome {
	o := rollbackOutcome{Tasks: t.Tasks, Repo: t.Repo, Branch: t.Branch, Action: actionDeleted}
	if o.Tasks == nil {
		o.Tasks = []string{}
	}
	var del func() error
	switch {
	case t.FromResults && tasks.IsRemote(t.Repo) && !t.Pushed:
		o.Action = actionSkipped
		o.Note = "never pushed: it existed only in the run's temporary clone"
		return o
	case t.FromResults && tasks.IsRemote(t.Repo):
		o.Remote = t.Repo
		del = func() error {
			return gitops.DeleteRemoteBranch(ctx, gitops.RemoteSpec{URL: t.Repo, Auth: auth}, t.Branch)
		}
	default:
		var remote *gitops.RemoteSpec
		if t.Remote != "" {
			o.Remote = redact.URL(t.Remote)
			remote = &gitops.RemoteSpec{URL: t.Remote, Auth: auth}
		}
		if t.FromResults && t.Commit != "" {
			head, _, found, err := gitops.BranchHead(t.Repo, t.Branch)
			if err == nil && found && head.String() != t.Commit {
				o.Action = actionSkipped
				o.Note = fmt.Sprintf("moved since the run: it points at %.10s, not at the run's %.10s; delete it yourself if you mean to",
					head.String(), t.Commit)
				return o
			}
		}
		del = func() error { return gitops.Rollback(ctx, t.Repo, t.Branch, remote) }
	}
	if dryRun {
		o.Action = actionWouldDelete
		return o
	}
	switch err := del(); {
	case errors.Is(err, gitops.ErrNotReclaimed):
		// Deleted; the objects only it used stay until git gc.
		o.Note = err.Error()
	case err != nil:
		o.Action, o.Error, o.err = actionFailed, err.Error(), err
	}
	return o
}

func printRollback(opts *rollbackOptions, outcomes []rollbackOutcome) error {
	p := opts.printer
	if opts.json {
		return p.JSON(struct {
			DryRun   bool              `json:"dry_run"`
			Branches []rollbackOutcome `json:"branches"`
		}{opts.dryRun, outcomes})
	}
	if len(outcomes) == 0 {
		p.Line("no branch to delete: no selected task committed anything")
	}
	for _, o := range outcomes {
		what := fmt.Sprintf("branch %s of %s", o.Branch, o.Repo)
		if o.Remote != "" && o.Remote != o.Repo {
			what += " and of " + o.Remote
		}
		if len(o.Tasks) > 0 {
			what += fmt.Sprintf(" (%s %s)", pluralWord(len(o.Tasks), "task"), strings.Join(o.Tasks, ", "))
		}
		switch o.Action {
		case actionDeleted:
			p.Success("deleted %s", what)
		case actionWouldDelete:
			p.Line("would delete %s", what)
		case actionSkipped:
			p.Line("skipped %s: %s", what, o.Note)
			continue
		case actionFailed:
			p.Problem("could not delete %s: %s", what, o.Error)
			if hint := cli.Hint(o.err); hint != "" {
				p.Problem("hint: %s", hint)
			}
			continue
		}
		if o.Note != "" {
			p.Warn("%s: %s", o.Branch, o.Note)
		}
	}
	return nil
}
