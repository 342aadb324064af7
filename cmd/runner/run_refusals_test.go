package main

import (
	"fmt"
	"path/filepath"
	"strings"
	"testing"

	"github.com/runner-dev/runner/internal/cli"
	"github.com/runner-dev/runner/internal/dockertest"
	"github.com/runner-dev/runner/internal/fakellm"
)

// A branch checked out in any worktree is never written, with or without
// --force: the run stops before anything starts, and the message never
// advises deleting or forcing that branch.
func TestRunNeverWritesACheckedOutBranch(t *testing.T) {
	repo, head := sourceRepo(t, map[string]string{"a.txt": "a\n"})
	review := filepath.Join(t.TempDir(), "review")
	gitCLI(t, repo, "worktree", "add", "-q", "-b", "review", review)
	reviewHead := gitCLI(t, review, "rev-parse", "HEAD")
	file := writeTaskFile(t, fmt.Sprintf(`
defaults: {repo: %s, image: %s}
tasks:
  - {id: onmain, prompt: "Change a.", branch: main}
  - {id: onreview, prompt: "Change a too.", branch: review}
`, repo, dockertest.Busybox(t)))
	for _, force := range []bool{false, true} {
		t.Run(fmt.Sprintf("force=%v", force), func(t *testing.T) {
			srv := fakellm.New(t)
			srv.Forever(edit("a.txt", "a", "b"))
			args := []string{"run", file, "--out", filepath.Join(t.TempDir(), "out")}
			if force {
				args = append(args, "--force")
			}
			res, pid := runRunner(t, srv, args...)
			if res.code != cli.ExitUsage {
				t.Fatalf("runner run: %s", res)
			}
			for _, want := range []string{
				`task "onmain": branch main is checked out in ` + repo + "; a checked-out branch is never written or deleted; choose another branch for this task",
				`task "onreview": branch review is checked out in ` + review + ";",
			} {
				if !strings.Contains(res.stderr, want) {
					t.Errorf("stderr lacks %q:\n%s", want, res.stderr)
				}
			}
			for _, advice := range []string{"rollback", "--force", "delete it"} {
				if strings.Contains(res.stderr, advice) {
					t.Errorf("stderr advises %q for a checked-out branch:\n%s", advice, res.stderr)
				}
			}
			if n := len(srv.Requests()); n != 0 {
				t.Errorf("%d model calls made", n)
			}
			noLeftovers(t, pid)
			userRepoUnchanged(t, repo, head)
			if got := gitCLI(t, review, "rev-parse", "HEAD"); got != reviewHead {
				t.Errorf("review moved from %s to %s", reviewHead, got)
			}
			if got := gitCLI(t, review, "status", "--porcelain"); got != "" {
				t.Errorf("review worktree: %s", got)
			}
		})
	}
}

// A branch that collides with the repository's refs, a ref that is not
// there, a repository without commits: each stops the run before any
// sandbox or model call.
func TestRunRefusesWhatTheRepositoryCannotTake(t *testing.T) {
	repo, head := sourceRepo(t, map[string]string{"a.txt": "a\n"})
	gitCLI(t, repo, "branch", "feature")
	empty := filepath.Join(t.TempDir(), "empty")
	gitCLI(t, filepath.Dir(empty), "init", "-q", empty)
	file := writeTaskFile(t, fmt.Sprintf(`
defaults: {repo: %s, image: %s}
tasks:
  - {id: below, prompt: "Change a.", branch: feature/below}
  - {id: noref, prompt: "Change a.", ref: v9}
  - {id: empty, prompt: "Change a.", repo: %s}
`, repo, dockertest.Busybox(t), empty))
	srv := fakellm.New(t)
	srv.Forever(edit("a.txt", "a", "b"))
	res, pid := runRunner(t, srv, "run", file, "--out", filepath.Join(t.TempDir(), "out"), "--force")
	if res.code != cli.ExitUsage {
		t.Fatalf("runner run: %s", res)
	}
	for _, want := range []string{
		`task "below": branch feature/below cannot be created: refs/heads/feature exists`,
		`task "noref": ref: ref not found: "v9" is not a branch, tag or commit of the repository`,
		`task "empty": repo: ` + empty + ": repository has no commits",
	} {
		if !strings.Contains(res.stderr, want) {
			t.Errorf("stderr lacks %q:\n%s", want, res.stderr)
		}
	}
	if n := len(srv.Requests()); n != 0 {
		t.Errorf("%d model calls made", n)
	}
	noLeftovers(t, pid)
	userRepoUnchanged(t, repo, head)
}

// A ref that names both a branch and a tag starts from the branch, as git
// clone --branch does, and the run says so.
func TestRunAmbiguousRef(t *testing.T) {
	repo, head := sourceRepo(t, map[string]string{"a.txt": "a\n"})
	gitCLI(t, repo, "tag", "v1")
	writeFile(t, filepath.Join(repo, "a.txt"), "on the branch\n")
	gitCLI(t, repo, "commit", "-q", "-am", "second")
	gitCLI(t, repo, "branch", "v1")
	gitCLI(t, repo, "reset", "-q", "--hard", head)
	branchTip := gitCLI(t, repo, "rev-parse", "refs/heads/v1")
	srv, _ := modelServer(t, map[string][]fakellm.Turn{"Look": {complete("Looked.")}})
	file := writeTaskFile(t, fmt.Sprintf("tasks:\n  - {id: look, repo: %s, ref: v1, prompt: \"Look around.\", image: %s}\n",
		repo, dockertest.Busybox(t)))
	out := filepath.Join(t.TempDir(), "out")
	res, pid := runRunner(t, srv, "run", file, "--out", out)
	if res.code != cli.ExitOK {
		t.Fatalf("runner run: %s", res)
	}
	want := `task "look": ref "v1" names both the branch v1 and the tag v1; the task starts from the branch`
	if !strings.Contains(res.stderr, want) {
		t.Errorf("stderr lacks %q:\n%s", want, res.stderr)
	}
	if r := readResultLines(t, out)[0]; r.Base != branchTip {
		t.Errorf("base %s, want the branch's %s", r.Base, branchTip)
	}
	noLeftovers(t, pid)
}
