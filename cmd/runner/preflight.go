package main

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"strings"

	"github.com/runner-dev/runner/gitops"
	"github.com/runner-dev/runner/internal/batch"
	"github.com/runner-dev/runner/tasks"
)

// repoReport is what the checks of a queue's local repositories found:
// problems stop a run before anything starts; warnings are shown.
type repoReport struct {
	problems []tasks.Problem
	warnings []tasks.Problem
}

// checkRepos checks each task's local repository as a run will use it,
// reading each repository once: it has commits, the task's ref names a
// commit (a ref that is both a branch and a tag is a warning saying which
// is taken), and the task's branch can be written — it is not checked out
// in any worktree, which nothing allows, and no ref stands in its way. That
// the branch exists is left to the run (--force, resume). Repositories
// given by URL are checked when cloned. With skipMissing, a local path that
// does not exist is not reported (validate may run where the repositories
// are not).
func checkRepos(queue []tasks.Task, skipMissing bool) repoReport {
	var rep repoReport
	type inspected struct {
		in       *gitops.Inspection
		reported bool // its error, once
		err      error
		refs     map[string]refResult // tasks of a queue mostly share a ref
	}
	repos := map[string]*inspected{}
	for _, t := range queue {
		if tasks.IsRemote(t.Repo) {
			continue
		}
		r := repos[t.Repo]
		if r == nil {
			r = &inspected{refs: map[string]refResult{}}
			if _, err := os.Stat(t.Repo); errors.Is(err, fs.ErrNotExist) && skipMissing {
				r.reported = true
			} else {
				r.in, r.err = gitops.Inspect(t.Repo)
			}
			repos[t.Repo] = r
		}
		problem := func(field, format string, args ...any) {
			rep.problems = append(rep.problems, taskProblem(t, field, format, args...))
		}
		if r.err != nil {
			if !r.reported {
				problem("repo", "repo: %v", r.err)
				r.reported = true
			}
			continue
		}
		if r.in == nil {
			continue
		}
		res, ok := r.refs[t.Ref]
		if !ok {
			res.choice, res.err = r.in.Ref(t.Ref)
			r.refs[t.Ref] = res
		}
		choice, err := res.choice, res.err
		switch {
		case err != nil:
			problem("ref", "ref: %v", err)
		case choice.Also != "":
			rep.warnings = append(rep.warnings, taskProblem(t, "ref",
				"ref %q names both the branch %s and the tag %s; the task starts from the branch, as git clone --branch does (write %s for the tag)",
				t.Ref, choice.Name.Short(), choice.Also.Short(), choice.Also))
		}
		if err == nil {
			checkImageBuild(r.in, t, &rep)
		}
		if err := r.in.CheckBranch(t.Branch); err != nil {
			msg := err.Error()
			if errors.Is(err, gitops.ErrBranchCheckedOut) {
				msg += "; choose another branch for this task"
			}
			problem("branch", "%s", msg)
		}
	}
	return rep
}

// refResult is what Inspection.Ref said of one ref.
type refResult struct {
	choice gitops.RefChoice
	err    error
}

// taskProblem is a problem about task t, at the place the task was written.
func taskProblem(t tasks.Task, field, format string, args ...any) tasks.Problem {
	return tasks.Problem{File: t.Source.File, Line: t.Source.Line, TaskID: t.ID, Field: field, Msg: fmt.Sprintf(format, args...)}
}

// problemText formats p as Problem.String does, for a task that may come
// from flags (no file).
func problemText(p tasks.Problem) string {
	if p.File == "" {
		return fmt.Sprintf("task %q: %s", p.TaskID, p.Msg)
	}
	return p.String()
}

// preflight checks the local repositories of the tasks a run will run (not
// those the out directory has finished) before anything starts: it prints
// the warnings and returns the problems as one configuration error.
func preflight(d *deps, queue []tasks.Task, store *tasks.Store) error {
	finished := store.Finished()
	var pending []tasks.Task
	for _, t := range queue {
		if _, done := finished[t.ID]; !done {
			pending = append(pending, t)
		}
	}
	rep := checkRepos(pending, false)
	for _, w := range rep.warnings {
		d.printer.Warn("%s", problemText(w))
	}
	if len(rep.problems) == 0 {
		return nil
	}
	lines := make([]string, len(rep.problems))
	for i, p := range rep.problems {
		lines[i] = problemText(p)
	}
	return fmt.Errorf("%w:\n  %s", batch.ErrConfig, strings.Join(lines, "\n  "))
}
