package batch

import (
	"context"
	"fmt"

	"github.com/runner-dev/runner/gitops"
	"github.com/runner-dev/runner/internal/redact"
	"github.com/runner-dev/runner/tasks"
)

// A task on a remote repository commits in a clone of its own, removed at
// its end: what it committed lives on only if it was pushed. So it goes on
// from the remote's branch where the earlier attempt pushed it, or from
// the task's base when that attempt committed nothing.

// unpushed explains why the work of attempt from of a remote task is not
// there to go on from, or "".
func unpushed(t tasks.Task, from tasks.Result) string {
	if from.Commit == "" || from.Pushed {
		return ""
	}
	return fmt.Sprintf("attempt %d committed %s in a clone of %s but did not push it (a task pushes unfinished work only with push: true), "+
		"so that work is not there to go on from; run the task again with push: true", from.Attempt, from.Commit, redact.URL(t.Repo))
}

// remoteBranchMoved explains why the remote's branch is not where attempt
// from left it (pushed to, or absent when it committed nothing), or "".
func remoteBranchMoved(ctx context.Context, t tasks.Task, from tasks.Result, auth gitops.Credentials) string {
	head, found, err := gitops.RemoteBranchHead(ctx, gitops.RemoteSpec{URL: t.Repo, Auth: auth}, t.Branch)
	repo := redact.URL(t.Repo) // credentials in the URL are never shown
	switch {
	case err != nil:
		return err.Error()
	case from.Commit == "" && found:
		return fmt.Sprintf("attempt %d committed nothing, but branch %s now exists on %s (at %s); delete it there to continue from the task's base",
			from.Attempt, t.Branch, repo, head)
	case from.Commit != "" && !found:
		return fmt.Sprintf("branch %s, where attempt %d pushed %s, no longer exists on %s", t.Branch, from.Attempt, from.Commit, repo)
	case from.Commit != "" && head.String() != from.Commit:
		return fmt.Sprintf("branch %s moved on %s since attempt %d pushed %s to it (it is now at %s): a continuation would not build on what is there",
			t.Branch, repo, from.Attempt, from.Commit, head)
	}
	return ""
}
