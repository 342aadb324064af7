package main

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/runner-dev/runner/internal/cli"
	"github.com/runner-dev/runner/internal/dockertest"
	"github.com/runner-dev/runner/internal/fakellm"
	"github.com/runner-dev/runner/tasks"
)

func edit(path, old, new string) fakellm.Turn {
	return fakellm.ToolCall("edit_file", fmt.Sprintf(`{"path":%q,"old_string":%q,"new_string":%q}`, path, old, new))
}

func complete(summary string) fakellm.Turn {
	return fakellm.ToolCall("complete", fmt.Sprintf(`{"summary":%q}`, summary))
}

// Several tasks on one repository and one on another, two at a time, each
// ending on its own branch; a failing check goes back to the agent.
func TestRunTasksConcurrently(t *testing.T) {
	repoA, headA := sourceRepo(t, map[string]string{"README.md": "# Helo\n", "src/app.txt": "v1\n"})
	repoB, headB := sourceRepo(t, map[string]string{"NOTES.md": "todo: nothing\n"})
	srv, scripts := modelServer(t, map[string][]fakellm.Turn{
		"heading": {edit("README.md", "Helo", "Hello"), complete("Fixed the heading.")},
		"version": {edit("src/app.txt", "v1", "v2"), complete("Bumped the version.")},
		"notes": {
			complete("Nothing to do."), // the check fails: it goes back
			fakellm.ToolCall("write_file", `{"path":"NOTES.md","content":"todo: ship\n"}`),
			complete("Wrote the plan."),
		},
	})
	file := writeTaskFile(t, fmt.Sprintf(`
defaults:
  image: %s
  budget_usd: 0.5
tasks:
  - id: heading
    repo: %s
    prompt: Fix the typo in the heading of README.md.
    check: grep -q Hello README.md
  - id: version
    repo: %s
    prompt: Bump the version in src/app.txt.
  - id: notes
    repo: %s
    prompt: Write the plan in the notes.
    check: grep -q ship NOTES.md
    check_retries: 1
`, dockertest.Busybox(t), repoA, repoA, repoB))
	out := filepath.Join(t.TempDir(), "out")
	res, pid := runRunner(t, srv, "run", file, "--out", out, "--concurrency", "2")
	if res.code != cli.ExitOK {
		t.Fatalf("runner run: %s", res)
	}
	scripts.left(t)
	results := byID(readResultLines(t, out))
	want := map[string]struct{ repo, base, branch, file, content string }{
		"heading": {repoA, headA, "agent/heading", "README.md", "# Hello"},
		"version": {repoA, headA, "agent/version", "src/app.txt", "v2"},
		"notes":   {repoB, headB, "agent/notes", "NOTES.md", "todo: ship"},
	}
	for id, w := range want {
		r := results[id]
		if r.Status != tasks.StatusSucceeded || r.Base != w.base || r.Branch != w.branch || r.Commit == "" || r.Repo != w.repo {
			t.Errorf("result of %s = %+v", id, r)
			continue
		}
		if got := gitCLI(t, w.repo, "rev-parse", w.branch); got != r.Commit {
			t.Errorf("%s: branch at %s, result says %s", id, got, r.Commit)
		}
		if got := gitCLI(t, w.repo, "show", w.branch+":"+w.file); got != w.content {
			t.Errorf("%s: %s on the branch = %q, want %q", id, w.file, got, w.content)
		}
		// The branch changes exactly the one file.
		if got := gitCLI(t, w.repo, "diff", "--name-only", w.base, w.branch); got != w.file {
			t.Errorf("%s: git diff base..branch lists %q, want %q", id, got, w.file)
		}
		if r.CostUSD <= 0 || r.Tokens.In == 0 || r.Calls == 0 {
			t.Errorf("%s: no cost recorded: %+v", id, r)
		}
		if _, err := os.Stat(filepath.Join(out, "trajectories", id+".1.jsonl")); err != nil {
			t.Errorf("%s: no trajectory: %v", id, err)
		}
	}
	if results["notes"].Steps != 3 {
		t.Errorf("notes took %d steps, want 3 (the check failed once)", results["notes"].Steps)
	}
	userRepoUnchanged(t, repoA, headA)
	userRepoUnchanged(t, repoB, headB)
	for _, want := range []string{"heading", "version", "notes", "3 task(s): 3 succeeded"} {
		if !strings.Contains(res.stdout, want) {
			t.Errorf("summary lacks %q:\n%s", want, res.stdout)
		}
	}
	// No secret anywhere in the out directory.
	filepath.Walk(out, func(p string, info os.FileInfo, err error) error {
		if err == nil && !info.IsDir() {
			if b, _ := os.ReadFile(p); strings.Contains(string(b), e2eKey) {
				t.Errorf("%s contains the API key", p)
			}
		}
		return nil
	})
	noLeftovers(t, pid)

	// Rollback deletes the branches and leaves the rest alone.
	rb := runBinary(t, "rollback", "--out", out, "--all")
	if rb.code != cli.ExitOK {
		t.Fatalf("runner rollback: %s", rb)
	}
	for _, repo := range []string{repoA, repoB} {
		if got := branchList(t, repo); len(got) != 1 || got[0] != "main" {
			t.Errorf("%s: branches after rollback = %v, want only main", repo, got)
		}
	}
	userRepoUnchanged(t, repoA, headA)
}

// A task that runs out of budget stops with budget_exhausted, spends no
// more than its cap, and leaves its partial work on its branch, marked so.
func TestRunOutOfBudget(t *testing.T) {
	repo, head := sourceRepo(t, map[string]string{"a.txt": "a\n"})
	var turns []fakellm.Turn
	for i := 0; i < 50; i++ {
		turns = append(turns, fakellm.ToolCall("write_file", fmt.Sprintf(`{"path":"step-%d.txt","content":"%s"}`, i, strings.Repeat("x", 2000))))
	}
	srv, _ := modelServer(t, map[string][]fakellm.Turn{"forever": turns})
	const budget = 0.004
	file := writeTaskFile(t, fmt.Sprintf(`
tasks:
  - id: spender
    repo: %s
    prompt: Work forever.
    budget_usd: %v
    image: %s
`, repo, budget, dockertest.Busybox(t)))
	out := filepath.Join(t.TempDir(), "out")
	res, pid := runRunner(t, srv, "run", file, "--out", out, "--max-completion-tokens", "2000")
	if res.code != cli.ExitFailure {
		t.Fatalf("runner run: %s", res)
	}
	r := byID(readResultLines(t, out))["spender"]
	if r.Status != tasks.StatusBudgetExhausted || r.CostUSD > budget || r.CostUSD == 0 || r.Commit == "" {
		t.Fatalf("result = %+v; want budget_exhausted within $%v, with a commit", r, budget)
	}
	msg := gitCLI(t, repo, "log", "-1", "--format=%B", "agent/spender")
	if !strings.Contains(msg, "partial: budget_exhausted") || !strings.Contains(msg, "Runner-Status: budget_exhausted") {
		t.Errorf("the partial commit is not marked as such:\n%s", msg)
	}
	if files := gitCLI(t, repo, "ls-tree", "--name-only", "agent/spender"); !strings.Contains(files, "step-0.txt") {
		t.Errorf("the partial work is not on the branch: %s", files)
	}
	userRepoUnchanged(t, repo, head)
	noLeftovers(t, pid)
}

// A run killed with SIGKILL in the middle of a task, run again with the
// same out directory, finishes every task exactly once, and no half-written
// branch is left behind.
func TestRunKilledAndResumed(t *testing.T) {
	repo, head := sourceRepo(t, map[string]string{"f.txt": "0\n"})
	release := make(chan struct{})
	var once atomic.Bool
	srv := fakellm.New(t)
	srv.Forever(fakellm.Func(func(r fakellm.Request) fakellm.Turn {
		task := r.Messages[1].Content
		last := r.Messages[len(r.Messages)-1]
		switch {
		case strings.Contains(task, "second") && once.CompareAndSwap(false, true):
			<-release // hold the second task's first call until the runner is killed
			return fakellm.Status(500, `{"error":{"message":"gone"}}`)
		case last.Role == "tool":
			return complete("done").WithUsage(100, 10, 0)
		}
		fields := strings.Fields(task)
		word := strings.TrimSuffix(fields[len(fields)-1], ".")
		return fakellm.ToolCall("write_file", fmt.Sprintf(`{"path":"%s.txt","content":"%s\n"}`, word, word)).WithUsage(100, 10, 0)
	}))
	defer close(release)
	file := writeTaskFile(t, fmt.Sprintf(`
defaults:
  repo: %s
  image: %s
tasks:
  - {id: first, prompt: "Write first."}
  - {id: second, prompt: "Write second."}
  - {id: third, prompt: "Write third."}
`, repo, dockertest.Busybox(t)))
	out := filepath.Join(t.TempDir(), "out")

	cmd := runnerCmd(t, srv, "run", file, "--out", out)
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	// Kill it once the first task is recorded and the second has begun.
	waitUntil(t, time.Minute, "the second task to start", func() bool {
		_, err := os.Stat(filepath.Join(out, "state", "second.json"))
		b, _ := os.ReadFile(filepath.Join(out, "results.jsonl"))
		return err == nil && strings.Contains(string(b), `"id":"first"`) && once.Load()
	})
	cmd.Process.Signal(syscall.SIGKILL)
	cmd.Wait()
	killed := cmd.Process.Pid
	if got := branchList(t, repo); strings.Join(got, " ") != "agent/first main" {
		t.Errorf("branches after the kill = %v; want only the finished task's", got)
	}

	res, pid := runRunner(t, srv, "run", file, "--out", out)
	if res.code != cli.ExitOK {
		t.Fatalf("the resumed run: %s", res)
	}
	if !strings.Contains(res.stderr, "first: already succeeded") {
		t.Errorf("the finished task was not skipped:\n%s", res.stderr)
	}
	counts := map[string]int{}
	for _, r := range readResultLines(t, out) {
		counts[r.ID]++
		if r.Status != tasks.StatusSucceeded {
			t.Errorf("result %+v", r)
		}
	}
	if counts["first"] != 1 || counts["second"] != 1 || counts["third"] != 1 {
		t.Errorf("results per task = %v, want each exactly once", counts)
	}
	for _, id := range []string{"first", "second", "third"} {
		if got := gitCLI(t, repo, "show", "agent/"+id+":"+id+".txt"); got != id {
			t.Errorf("agent/%s holds %q", id, got)
		}
	}
	userRepoUnchanged(t, repo, head)
	noLeftovers(t, killed, pid) // the killed run's container was removed by the second run
}

// Mistakes in the setup are found before anything runs: exit 2, nothing
// spent, no container started.
func TestRunConfigurationErrors(t *testing.T) {
	repo, _ := sourceRepo(t, map[string]string{"a": "a\n"})
	gitCLI(t, repo, "branch", "agent/taken")
	srv := fakellm.New(t)
	file := writeTaskFile(t, fmt.Sprintf(`
tasks:
  - {id: taken, repo: %s, prompt: p, image: %s}
  - {id: unpriced, repo: %s, prompt: p, model: my-local-model, budget_usd: 1, image: %s}
  - {id: noimage, repo: %s, prompt: p, image: runner-no-such-image:1}
`, repo, dockertest.Busybox(t), repo, dockertest.Busybox(t), repo))
	res, pid := runRunner(t, srv, "run", file, "--out", filepath.Join(t.TempDir(), "out"))
	if res.code != cli.ExitUsage {
		t.Fatalf("runner run: %s", res)
	}
	for _, want := range []string{
		`task "taken": branch agent/taken already exists`,
		`task "unpriced": `, "my-local-model",
		"image runner-no-such-image:1 not found — pull or build it (`docker pull runner-no-such-image:1`)",
	} {
		if !strings.Contains(res.stderr, want) {
			t.Errorf("stderr lacks %q:\n%s", want, res.stderr)
		}
	}
	if n := len(srv.Requests()); n != 0 {
		t.Errorf("%d model calls were made before the configuration was checked", n)
	}
	noLeftovers(t, pid)
}

// SIGTERM (or Ctrl-C): no new task starts, the running one records its
// state, every container is removed, and the exit code is not zero.
func TestRunStoppedBySignal(t *testing.T) {
	for _, sig := range []syscall.Signal{syscall.SIGTERM, syscall.SIGINT} {
		t.Run(sig.String(), func(t *testing.T) {
			repo, head := sourceRepo(t, map[string]string{"f.txt": "0\n"})
			var started atomic.Bool
			srv := fakellm.New(t)
			srv.Forever(fakellm.Func(func(r fakellm.Request) fakellm.Turn {
				started.Store(true)
				return fakellm.ToolCall("run_command", `{"command":"sleep 600"}`).WithUsage(100, 10, 0)
			}))
			file := writeTaskFile(t, fmt.Sprintf(`
defaults: {repo: %s, image: %s}
tasks:
  - {id: one, prompt: "Sleep."}
  - {id: two, prompt: "Sleep too."}
`, repo, dockertest.Busybox(t)))
			out := filepath.Join(t.TempDir(), "out")
			cmd := runnerCmd(t, srv, "run", file, "--out", out)
			var stderr strings.Builder
			cmd.Stderr = &stderr
			if err := cmd.Start(); err != nil {
				t.Fatal(err)
			}
			waitUntil(t, time.Minute, "the first command to run", func() bool {
				return started.Load() && len(runnerContainers(t, false, cmd.Process.Pid)) > 0
			})
			time.Sleep(500 * time.Millisecond) // the sleep is running in the sandbox
			cmd.Process.Signal(sig)
			done := make(chan error, 1)
			go func() { done <- cmd.Wait() }()
			select {
			case <-done:
			case <-time.After(time.Minute):
				cmd.Process.Kill()
				t.Fatalf("runner still running a minute after %s:\n%s", sig, stderr.String())
			}
			if code := cmd.ProcessState.ExitCode(); code != cli.ExitInterrupted {
				t.Errorf("exit code %d, want %d\n%s", code, cli.ExitInterrupted, stderr.String())
			}
			rs := readResultLines(t, out)
			if len(rs) != 1 || rs[0].ID != "one" || rs[0].Status != tasks.StatusInterrupted {
				t.Errorf("results = %+v; want only task one, interrupted (task two never starts)", rs)
			}
			if got := branchList(t, repo); strings.Join(got, " ") != "main" {
				t.Errorf("branches = %v; an interrupted task commits nothing", got)
			}
			userRepoUnchanged(t, repo, head)
			noLeftovers(t, cmd.Process.Pid)
		})
	}
}

// A task on a URL repository works in a private clone and pushes its branch
// when it succeeds; rollback deletes the pushed branch.
func TestRunPushesToRemote(t *testing.T) {
	src, head := sourceRepo(t, map[string]string{"a.txt": "a\n"})
	bare := filepath.Join(t.TempDir(), "remote.git")
	gitCLI(t, filepath.Dir(bare), "clone", "-q", "--bare", src, bare)
	srv, _ := modelServer(t, map[string][]fakellm.Turn{
		"remote": {edit("a.txt", "a", "b"), complete("Changed a to b.")},
	})
	file := writeTaskFile(t, fmt.Sprintf(`
tasks:
  - {id: remote, repo: "file://%s", prompt: "Change the remote file.", image: %s}
`, bare, dockertest.Busybox(t)))
	out := filepath.Join(t.TempDir(), "out")
	res, pid := runRunner(t, srv, "run", file, "--out", out)
	if res.code != cli.ExitOK {
		t.Fatalf("runner run: %s", res)
	}
	r := readResultLines(t, out)[0]
	if !r.Pushed || r.Base != head || gitCLI(t, bare, "rev-parse", "agent/remote") != r.Commit {
		t.Fatalf("result %+v; want the branch pushed to the remote", r)
	}
	if got := gitCLI(t, bare, "show", "agent/remote:a.txt"); got != "b" {
		t.Errorf("a.txt on the pushed branch = %q", got)
	}
	noLeftovers(t, pid)
	if rb := runBinary(t, "rollback", "--out", out, "--all"); rb.code != cli.ExitOK {
		t.Fatalf("runner rollback: %s", rb)
	}
	if got := branchList(t, bare); strings.Join(got, " ") != "main" {
		t.Errorf("remote branches after rollback = %v", got)
	}
}
