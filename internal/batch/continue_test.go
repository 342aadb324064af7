package batch

import (
	"context"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/runner-dev/runner/internal/fakellm"
	"github.com/runner-dev/runner/sandbox"
	"github.com/runner-dev/runner/sandbox/inmem"
	"github.com/runner-dev/runner/tasks"
)

func (r *memRun) cont(ctx context.Context, copt ContinueOptions) (tasks.Result, error) {
	r.t.Helper()
	res, err := Continue(ctx, copt, Options{RunID: "inmem-continue"}, r.deps())
	for _, sb := range r.backend.Started() {
		if !sb.Closed() {
			r.t.Errorf("a sandbox of the continuation was left open")
		}
	}
	return res, err
}

var fixHallo = fakellm.ToolCall("edit_file", `{"path":"README.md","old_string":"Hallo","new_string":"Hello"}`)

// A task that ran out of steps goes on from its branch and its history,
// and its branch moves forward by one commit, without force.
func TestContinueStepLimitThenSucceeds(t *testing.T) {
	r := newMemRun(t)
	task := r.task("ran-out")
	task.MaxSteps = 2
	r.script(task.Model, wrongFix, runCommand("make"))
	first := r.run(context.Background(), []tasks.Task{task}, Options{}).Results[0]
	if first.Status != tasks.StatusStepLimit || first.Commit == "" {
		t.Fatalf("first attempt = %+v, want step_limit with a commit", first)
	}
	srv := r.script(task.Model, fixHallo, complete)
	res, err := r.cont(context.Background(), ContinueOptions{ID: task.ID, MaxSteps: 5, Prompt: "Mind the spelling."})
	if err != nil {
		t.Fatal(err)
	}
	if res.Status != tasks.StatusSucceeded || res.Attempt != 2 || res.Continues != 1 || res.Branch != task.Branch {
		t.Fatalf("continuation = %+v, want attempt 2 continuing 1, succeeded on %s", res, task.Branch)
	}
	if head := git(t, r.repo, "rev-parse", task.Branch); head != res.Commit {
		t.Errorf("branch at %s, result names %s", head, res.Commit)
	}
	if parent := git(t, r.repo, "rev-parse", task.Branch+"^"); parent != first.Commit {
		t.Errorf("the new commit's parent is %s, want the first attempt's commit %s", parent, first.Commit)
	}
	if got := git(t, r.repo, "show", task.Branch+":README.md"); got != "# Hello" {
		t.Errorf("README.md on the branch = %q", got)
	}
	if res.Base != first.Base {
		t.Errorf("base = %s, want the task's base %s", res.Base, first.Base)
	}
	// The continuation was told why it stopped, and the guidance.
	msgs := srv.Requests()[0].Messages
	last := msgs[len(msgs)-1].Content
	if !strings.Contains(last, "it used all its steps") || !strings.Contains(last, "Mind the spelling.") {
		t.Errorf("the continuation's prompt = %q", last)
	}
	if msgs[1].Content != "" && !strings.Contains(msgs[1].Content, task.Prompt) {
		t.Errorf("the task message was not sent again: %q", msgs[1].Content)
	}
	// A rerun of the queue skips the continued task.
	r.reopen()
	r.script(task.Model)
	sum := r.run(context.Background(), []tasks.Task{task}, Options{})
	if sum.Skipped != 1 || sum.Results[0].Attempt != 2 {
		t.Errorf("rerun = %+v, want the task skipped with attempt 2", sum)
	}
}

// A continuation that changes nothing leaves the branch where it was, and
// its result says so: it can be continued again.
func TestContinueThatChangesNothing(t *testing.T) {
	r := newMemRun(t)
	task := r.task("idle")
	task.MaxSteps = 2
	r.script(task.Model, wrongFix, runCommand("make"))
	first := r.run(context.Background(), []tasks.Task{task}, Options{}).Results[0]
	r.script(task.Model, runCommand("ls"))
	second, err := r.cont(context.Background(), ContinueOptions{ID: task.ID, MaxSteps: 1})
	if err != nil || second.Status != tasks.StatusStepLimit || second.Commit != first.Commit || second.Branch != task.Branch {
		t.Fatalf("second attempt = %+v, %v; want step_limit naming the first commit %s", second, err, first.Commit)
	}
	r.script(task.Model, fixHallo, complete)
	third, err := r.cont(context.Background(), ContinueOptions{ID: task.ID, MaxSteps: 5})
	if err != nil || third.Status != tasks.StatusSucceeded || third.Continues != 2 {
		t.Fatalf("third attempt = %+v, %v; want it to succeed, continuing 2", third, err)
	}
	if parent := git(t, r.repo, "rev-parse", task.Branch+"^"); parent != first.Commit {
		t.Errorf("parent of the branch head = %s, want %s", parent, first.Commit)
	}
}

// A continuation's budget is its own cap, and it never spends past it.
func TestContinueKeepsToItsOwnBudget(t *testing.T) {
	r := newMemRun(t)
	task := r.task("gpt-4o-mini")
	task.ID, task.MaxSteps = "budget", 1
	r.script(task.Model, wrongFix)
	first := r.run(context.Background(), []tasks.Task{task}, Options{}).Results[0]
	if first.Status != tasks.StatusStepLimit {
		t.Fatalf("first attempt = %+v", first)
	}
	const capUSD = 0.001 // two or three calls of this script
	srv := fakellm.New(t)
	srv.Forever(runCommand("make").WithUsage(500, 500, 0))
	r.models[task.Model] = srv
	res, err := r.cont(context.Background(), ContinueOptions{ID: task.ID, BudgetUSD: capUSD, MaxSteps: 50})
	if err != nil {
		t.Fatal(err)
	}
	if res.Status != tasks.StatusBudgetExhausted || res.CostUSD > capUSD || res.CostUSD == 0 || len(srv.Requests()) < 2 {
		t.Errorf("continuation = %s spending $%v in %d calls, want budget_exhausted after calls costing at most $%v",
			res.Status, res.CostUSD, len(srv.Requests()), capUSD)
	}
}

// A task whose check failed goes on with the check's verdict, and passes.
func TestContinueAfterCheckFailed(t *testing.T) {
	r := newMemRun(t)
	task := r.task("check")
	task.Check = "grep -q Hello README.md"
	r.script(task.Model, wrongFix, complete)
	if first := r.run(context.Background(), []tasks.Task{task}, Options{}).Results[0]; first.Status != tasks.StatusCheckFailed {
		t.Fatalf("first attempt = %+v", first)
	}
	srv := r.script(task.Model, fixHallo, complete)
	res, err := r.cont(context.Background(), ContinueOptions{ID: task.ID})
	if err != nil || res.Status != tasks.StatusSucceeded {
		t.Fatalf("continuation = %+v, %v", res, err)
	}
	msgs := srv.Requests()[0].Messages
	if last := msgs[len(msgs)-1].Content; !strings.Contains(last, "grep -q Hello README.md") {
		t.Errorf("the prompt does not name the check: %q", last)
	}
}

// What cannot be continued is refused, before anything starts, with a
// message naming the task and the file.
func TestContinueRefusals(t *testing.T) {
	tests := []struct {
		name  string
		turns []fakellm.Turn
		id    string
		harm  func(r *memRun, res tasks.Result)
		want  []string // in the error
	}{{
		name:  "succeeded",
		turns: []fakellm.Turn{fixTypo, complete},
		want:  []string{"succeeded", "results.jsonl"},
	}, {
		name:  "unknown task",
		turns: []fakellm.Turn{fixTypo, complete},
		id:    "nope",
		want:  []string{"task nope", "no result", "results.jsonl"},
	}, {
		name:  "model error",
		turns: []fakellm.Turn{wrongFix, fakellm.Unauthorized()},
		want:  []string{"model_error", "budget_exhausted, step_limit, time_limit or check_failed"},
	}, {
		name:  "trajectory missing",
		turns: []fakellm.Turn{wrongFix, runCommand("make")},
		harm:  func(r *memRun, res tasks.Result) { os.Remove(TrajectoryPath(r.store.Dir(), res.ID, 1)) },
		want:  []string{"missing", filepath.Join("trajectories", "refused.1.jsonl")},
	}, {
		name:  "trajectory corrupt",
		turns: []fakellm.Turn{wrongFix, runCommand("make")},
		harm: func(r *memRun, res tasks.Result) {
			p := TrajectoryPath(r.store.Dir(), res.ID, 1)
			data, _ := os.ReadFile(p)
			os.WriteFile(p, data[:len(data)/2], 0o644)
		},
		want: []string{"cannot be read back", filepath.Join("trajectories", "refused.1.jsonl")},
	}, {
		name:  "definition missing",
		turns: []fakellm.Turn{wrongFix, runCommand("make")},
		harm:  func(r *memRun, res tasks.Result) { os.Remove(tasks.DefinitionPath(r.store.Dir(), res.ID)) },
		want:  []string{"refused", tasks.DefinitionPath("", "refused")},
	}, {
		name:  "branch moved",
		turns: []fakellm.Turn{wrongFix, runCommand("make")},
		harm: func(r *memRun, res tasks.Result) {
			c := git(r.t, r.repo, "commit-tree", "-p", res.Commit, "-m", "mine", res.Commit+"^{tree}")
			git(r.t, r.repo, "update-ref", "refs/heads/"+res.Branch, c)
		},
		want: []string{"moved", "agent/refused"},
	}, {
		name:  "results claim a later attempt continued",
		turns: []fakellm.Turn{wrongFix, runCommand("make")},
		harm: func(r *memRun, res tasks.Result) {
			res.Attempt, res.Continues = 2, 5
			if err := r.store.Record(res); err != nil {
				r.t.Fatal(err)
			}
		},
		want: []string{"attempt 2 continues attempt 5", "results.jsonl"},
	}, {
		name:  "branch deleted",
		turns: []fakellm.Turn{wrongFix, runCommand("make")},
		harm:  func(r *memRun, res tasks.Result) { git(r.t, r.repo, "branch", "-D", res.Branch) },
		want:  []string{"no longer exists", "agent/refused"},
	}}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := newMemRun(t)
			task := r.task("refused")
			task.MaxSteps = 2
			r.script(task.Model, tt.turns...)
			first := r.run(context.Background(), []tasks.Task{task}, Options{}).Results[0]
			if tt.harm != nil {
				tt.harm(r, first)
			}
			head, _ := gitTry(r.repo, "rev-parse", "-q", "--verify", "refs/heads/"+task.Branch)
			id := task.ID
			if tt.id != "" {
				id = tt.id
			}
			srv := r.script(task.Model)
			_, err := r.cont(context.Background(), ContinueOptions{ID: id})
			if !errors.Is(err, ErrCannotContinue) {
				t.Fatalf("err = %v, want ErrCannotContinue", err)
			}
			if !strings.Contains(err.Error(), "task "+id) {
				t.Errorf("err = %q does not name the task", err)
			}
			for _, w := range tt.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("err = %q, want it to mention %q", err, w)
				}
			}
			if n := len(r.store.Results()); n != 1 && !strings.HasPrefix(tt.name, "results claim") {
				t.Errorf("%d results recorded, want the first attempt's only", n)
			}
			if len(srv.Requests()) != 0 || len(r.backend.Started()) != 1 {
				t.Errorf("the refused continuation called the model or started a sandbox")
			}
			if after, _ := gitTry(r.repo, "rev-parse", "-q", "--verify", "refs/heads/"+task.Branch); after != head {
				t.Errorf("branch moved from %q to %q", head, after)
			}
		})
	}
}

// Someone committing to the branch while the continuation works makes it
// leave the branch alone: nothing is forced over their commit.
func TestContinueDoesNotOverwriteABranchMovedMeanwhile(t *testing.T) {
	r := newMemRun(t)
	task := r.task("raced")
	task.MaxSteps = 2
	r.script(task.Model, wrongFix, runCommand("make"))
	first := r.run(context.Background(), []tasks.Task{task}, Options{}).Results[0]
	theirs := git(t, r.repo, "commit-tree", "-p", first.Commit, "-m", "mine", first.Commit+"^{tree}")
	r.backend.Exec = func(context.Context, *inmem.Sandbox, string, sandbox.ExecOptions) (sandbox.ExecResult, error) {
		git(t, r.repo, "update-ref", "refs/heads/"+task.Branch, theirs)
		return sandbox.ExecResult{}, nil
	}
	r.script(task.Model, fixHallo, runCommand("make"), complete)
	res, err := r.cont(context.Background(), ContinueOptions{ID: task.ID, MaxSteps: 5})
	if err != nil {
		t.Fatal(err)
	}
	if res.Status != tasks.StatusError || !strings.Contains(res.Error, "moved") || res.Commit != "" {
		t.Errorf("continuation = %s %q commit %q, want an error saying the branch moved, no commit", res.Status, res.Error, res.Commit)
	}
	if head := git(t, r.repo, "rev-parse", task.Branch); head != theirs {
		t.Errorf("branch at %s, want their commit %s", head, theirs)
	}
}

// gitTry runs the git CLI and returns its trimmed output, and its error
// instead of failing the test.
func gitTry(dir string, args ...string) (string, error) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, "git", args...)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "GIT_CONFIG_GLOBAL=/dev/null", "GIT_CONFIG_NOSYSTEM=1")
	out, err := cmd.Output()
	return strings.TrimSpace(string(out)), err
}
