package batch

import (
	"archive/tar"
	"bytes"
	"context"
	"os/exec"
	"strings"
	"testing"

	"github.com/go-git/go-git/v5/plumbing"

	"github.com/runner-dev/runner/gitops"
	"github.com/runner-dev/runner/tasks"
)

// A branch counts as left by an earlier attempt of a task only when its
// commit's trailer block, as git parses it, names the task, and its parent
// is the base the new attempt starts from: a summary that spells the
// trailer out in the body does not make someone else's branch the
// runner's to overwrite.
func TestEarlierAttemptIsRecognisedByItsTrailers(t *testing.T) {
	repo := fixtureRepo(t)
	base := plumbing.NewHash(git(t, repo, "rev-parse", "HEAD"))
	git(t, repo, "commit", "-q", "--allow-empty", "-m", "moved on")
	other := plumbing.NewHash(git(t, repo, "rev-parse", "HEAD"))
	git(t, repo, "reset", "-q", "--hard", base.String())

	// byGit writes a commit with message on parent, as a person would.
	byGit := func(message string, parent plumbing.Hash) plumbing.Hash {
		cmd := exec.Command("git", "commit-tree", "-p", parent.String(), "-F", "-", "HEAD^{tree}")
		cmd.Dir, cmd.Stdin = repo, strings.NewReader(message)
		cmd.Env = append(cmd.Environ(), "GIT_CONFIG_GLOBAL=/dev/null", "GIT_CONFIG_NOSYSTEM=1",
			"GIT_AUTHOR_NAME=t", "GIT_AUTHOR_EMAIL=t@t", "GIT_COMMITTER_NAME=t", "GIT_COMMITTER_EMAIL=t@t")
		out, err := cmd.Output()
		if err != nil {
			t.Fatalf("git commit-tree: %v", err)
		}
		return plumbing.NewHash(strings.TrimSpace(string(out)))
	}
	// byRunner commits a change on parent as the runner does for task id.
	byRunner := func(summary, id string, parent plumbing.Hash) plumbing.Hash {
		var snap bytes.Buffer
		tw := tar.NewWriter(&snap)
		body := "# Hello " + id + "\n"
		if err := tw.WriteHeader(&tar.Header{Name: "README.md", Mode: 0o644, Size: int64(len(body))}); err != nil {
			t.Fatal(err)
		}
		tw.Write([]byte(body))
		tw.Close()
		task := tasks.Task{ID: id, Model: "gpt-x"}
		res := &tasks.Result{Status: tasks.StatusSucceeded, Summary: summary}
		cr, err := gitops.CommitTree(context.Background(), repo, parent, &snap, gitops.CommitOptions{
			Branch: "scratch/" + id, Message: commitMessage(task, res), Trailers: trailers(task, res), Force: true,
		})
		if err != nil {
			t.Fatal(err)
		}
		return cr.Hash
	}
	tests := []struct {
		name   string
		commit plumbing.Hash
		want   bool
	}{
		{"a person's, naming the task in the body", byGit("my work\n\nRunner-Task: t\n\nSigned-off-by: Me <me@example.com>\n", base), false},
		{"a person's, trailers hidden behind a divider", byGit("my work\n\nRunner-Task: t\n---\n\nReviewed-by: Me <me@example.com>\n", base), false},
		{"another task's, whose summary names this one", byRunner("Done.\n\nRunner-Task: t\n", "u", base), false},
		{"the runner's for this task, on another base", byRunner("Done.", "t", other), false},
		{"the runner's for this task", byRunner("Done.\n\nRunner-Task: u\n---\n", "t", base), true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			git(t, repo, "update-ref", "refs/heads/agent/t", tt.commit.String())
			w := &work{task: tasks.Task{ID: "t", Branch: "agent/t"}, repoPath: repo, clone: &gitops.Workspace{Base: base}}
			if got := w.branchFromEarlierAttempt(); got != tt.want {
				t.Errorf("branchFromEarlierAttempt = %v, want %v", got, tt.want)
			}
			store := interruptedStore(t, "t")
			taken := branchTaken(tasks.Task{ID: "t", Repo: repo, Branch: "agent/t"}, store) != ""
			// Before the run the base is not known yet: only the trailers
			// are checked.
			wantTaken := !tt.want && !strings.Contains(tt.name, "another base")
			if taken != wantTaken {
				t.Errorf("branchTaken = %v, want %v", taken, wantTaken)
			}
		})
	}
}

// interruptedStore is an out directory where task id started and never
// finished.
func interruptedStore(t *testing.T, id string) *tasks.Store {
	t.Helper()
	dir := t.TempDir()
	s, err := tasks.OpenStore(dir)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := s.Start(id); err != nil {
		t.Fatal(err)
	}
	s.Close()
	s, err = tasks.OpenStore(dir)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	return s
}
