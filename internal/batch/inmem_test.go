package batch

import (
	"bytes"
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/runner-dev/runner/agent"
	"github.com/runner-dev/runner/budget"
	"github.com/runner-dev/runner/internal/fakellm"
	"github.com/runner-dev/runner/internal/policy"
	"github.com/runner-dev/runner/sandbox"
	"github.com/runner-dev/runner/sandbox/inmem"
	"github.com/runner-dev/runner/tasks"
)

// memRun is a run on the in-memory sandbox: a local repository, an out
// directory, and one scripted model server per model name, so that each
// task of a queue (whose model names its server) has its own script.
type memRun struct {
	t       *testing.T
	repo    string
	store   *tasks.Store
	backend *inmem.Backend
	models  map[string]*fakellm.Server
}

// newMemRun makes a repository whose main branch holds README.md
// ("# Helo\n") and src/main.go, and an empty out directory.
func newMemRun(t *testing.T) *memRun {
	t.Helper()
	repo := t.TempDir()
	git(t, repo, "init", "-q", "-b", "main")
	os.MkdirAll(filepath.Join(repo, "src"), 0o755)
	os.WriteFile(filepath.Join(repo, "README.md"), []byte("# Helo\n"), 0o644)
	os.WriteFile(filepath.Join(repo, "src/main.go"), []byte("package main\n"), 0o644)
	git(t, repo, "add", "-A")
	git(t, repo, "commit", "-q", "-m", "first")
	r := &memRun{t: t, repo: repo, backend: &inmem.Backend{}, models: map[string]*fakellm.Server{}}
	r.reopen()
	return r
}

// reopen opens the out directory again, as a rerun does.
func (r *memRun) reopen() {
	r.t.Helper()
	dir := filepath.Join(filepath.Dir(r.repo), "out")
	if r.store != nil {
		dir = r.store.Dir()
		r.store.Close()
	}
	store, err := tasks.OpenStore(dir)
	if err != nil {
		r.t.Fatal(err)
	}
	r.t.Cleanup(func() { store.Close() })
	r.store = store
}

// script gives the model named name its turns.
func (r *memRun) script(name string, turns ...fakellm.Turn) *fakellm.Server {
	srv := fakellm.New(r.t, turns...)
	r.models[name] = srv
	return srv
}

// task is a task of the run's repository answered by the model named id.
func (r *memRun) task(id string) tasks.Task {
	return tasks.Task{ID: id, Repo: r.repo, Prompt: "Fix the typo in README.md.", Image: "inmem", Model: id, Branch: "agent/" + id}
}

func (r *memRun) deps() Deps {
	return Deps{
		Store:        r.store,
		StartSandbox: r.backend.Start,
		ImageExists:  func(context.Context, string) (bool, error) { return true, nil },
		NewModel: func(task tasks.Task, _ *agent.Trajectory) (agent.Model, error) {
			srv, ok := r.models[task.Model]
			if !ok {
				r.t.Fatalf("no script for model %q", task.Model)
			}
			return agent.NewOpenAI(agent.OpenAIConfig{BaseURL: srv.URL(), APIKey: "sk-batch-inmem-key-123456"})
		},
		Prices:  budget.DefaultPrices(),
		Secrets: []string{"sk-batch-inmem-key-123456"},
		WorkDir: r.t.TempDir(),
	}
}

func (r *memRun) run(ctx context.Context, queue []tasks.Task, opt Options) Summary {
	r.t.Helper()
	opt.RunID = "inmem"
	sum, err := Run(ctx, queue, opt, r.deps())
	if err != nil {
		r.t.Fatalf("Run: %v", err)
	}
	for _, sb := range r.backend.Started() {
		if !sb.Closed() {
			r.t.Errorf("a sandbox of the run was left open")
		}
	}
	return sum
}

// branch describes the branch of the repository at dir: its subject, its
// Runner-Status trailer as git parses it, and the README.md it holds; ""
// when there is no such branch.
func branch(t *testing.T, dir, name string) string {
	t.Helper()
	if exec.Command("git", "-C", dir, "rev-parse", "--verify", "-q", "refs/heads/"+name).Run() != nil {
		return ""
	}
	return git(t, dir, "log", "-1", "--format=%s | %(trailers:key=Runner-Status,valueonly,separator=%x2C)", name) +
		" | " + git(t, dir, "show", name+":README.md")
}

var (
	fixTypo    = fakellm.ToolCall("edit_file", `{"path":"README.md","old_string":"Helo","new_string":"Hello"}`)
	wrongFix   = fakellm.ToolCall("edit_file", `{"path":"README.md","old_string":"Helo","new_string":"Hallo"}`)
	complete   = fakellm.ToolCall("complete", `{"summary":"Fixed the typo."}`)
	runCommand = func(cmd string) fakellm.Turn { return fakellm.ToolCall("run_command", `{"command":"`+cmd+`"}`) }
)

// Each way a task can end gets its status, and the work done before the
// end is committed: in full, marked as partial, or not at all (the run
// stopped, a protected path changed, nothing changed).
func TestStatusOfEachOutcome(t *testing.T) {
	tests := []struct {
		name    string
		task    func(tasks.Task) tasks.Task
		turns   []fakellm.Turn
		exec    inmem.ExecFunc
		opt     Options
		want    tasks.Status
		branch  string // as described by branch(); "" for none
		errText string
	}{{
		name:   "succeeded",
		turns:  []fakellm.Turn{fixTypo, complete},
		want:   tasks.StatusSucceeded,
		branch: "runner: succeeded | succeeded | # Hello",
	}, {
		name:  "nothing changed",
		turns: []fakellm.Turn{fakellm.ToolCall("complete", `{"summary":"Nothing to fix."}`)},
		want:  tasks.StatusSucceeded,
	}, {
		name:   "step limit",
		task:   func(t tasks.Task) tasks.Task { t.MaxSteps = 2; return t },
		turns:  []fakellm.Turn{fixTypo, runCommand("make")},
		want:   tasks.StatusStepLimit,
		branch: "runner: step-limit (partial: step_limit) | step_limit | # Hello",
	}, {
		name:    "check failed",
		task:    func(t tasks.Task) tasks.Task { t.Check = "grep -q Hello README.md"; return t },
		turns:   []fakellm.Turn{wrongFix, complete},
		want:    tasks.StatusCheckFailed,
		branch:  "runner: check-failed (partial: check_failed) | check_failed | # Hallo",
		errText: "the check failed",
	}, {
		name: "check passed on retry",
		task: func(t tasks.Task) tasks.Task { t.Check = "grep -q Hello README.md"; t.CheckRetries = 1; return t },
		turns: []fakellm.Turn{wrongFix, complete,
			fakellm.ToolCall("edit_file", `{"path":"README.md","old_string":"Hallo","new_string":"Hello"}`), complete},
		want:   tasks.StatusSucceeded,
		branch: "runner: check-passed-on-retry | succeeded | # Hello",
	}, {
		name:    "model error",
		turns:   []fakellm.Turn{fixTypo, fakellm.Unauthorized()},
		want:    tasks.StatusModelError,
		branch:  "runner: model-error (partial: model_error) | model_error | # Hello",
		errText: "401",
	}, {
		name: "sandbox failed mid-task",
		exec: func(context.Context, *inmem.Sandbox, string, sandbox.ExecOptions) (sandbox.ExecResult, error) {
			return sandbox.ExecResult{}, sandbox.ErrStopped
		},
		turns:   []fakellm.Turn{fixTypo, runCommand("make")},
		want:    tasks.StatusSandboxError,
		branch:  "runner: sandbox-failed-mid-task (partial: sandbox_error) | sandbox_error | # Hello",
		errText: "sandbox is stopped",
	}, {
		name:    "budget exhausted",
		task:    func(t tasks.Task) tasks.Task { t.Model, t.BudgetUSD = "gpt-4o-mini", 0.0001; return t },
		want:    tasks.StatusBudgetExhausted,
		errText: "budget",
	}, {
		name: "protected path changed by a command",
		exec: func(ctx context.Context, sb *inmem.Sandbox, cmd string, _ sandbox.ExecOptions) (sandbox.ExecResult, error) {
			return sandbox.ExecResult{}, sb.WriteFile(ctx, ".github/workflows/ci.yml", []byte("on: push\n"), 0)
		},
		turns:   []fakellm.Turn{fixTypo, runCommand("generate-ci"), complete},
		opt:     Options{Policy: policyProtecting(".github/workflows/**")},
		want:    tasks.StatusPolicyViolation,
		errText: ".github/workflows/ci.yml",
	}, {
		name: "new content over limits.commit_size",
		task: func(t tasks.Task) tasks.Task { t.Limits.CommitSize = 1 << 20; return t },
		exec: func(ctx context.Context, sb *inmem.Sandbox, cmd string, _ sandbox.ExecOptions) (sandbox.ExecResult, error) {
			return sandbox.ExecResult{}, sb.WriteFile(ctx, "data/dump.bin", bytes.Repeat([]byte("x"), 2<<20), 0)
		},
		turns:   []fakellm.Turn{fixTypo, runCommand("dump"), complete},
		want:    tasks.StatusPolicyViolation,
		errText: `(limits.commit_size); largest files: "data/dump.bin" (2.0 MiB)`,
	}}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := newMemRun(t)
			r.backend.Exec = tt.exec
			task := r.task(strings.ReplaceAll(tt.name, " ", "-"))
			if tt.task != nil {
				task = tt.task(task)
			}
			r.script(task.Model, tt.turns...)
			sum := r.run(context.Background(), []tasks.Task{task}, tt.opt)
			res := sum.Results[0]
			if res.Status != tt.want || !strings.Contains(res.Error, tt.errText) {
				t.Errorf("status %s, error %q; want %s, an error mentioning %q", res.Status, res.Error, tt.want, tt.errText)
			}
			got := branch(t, r.repo, task.Branch)
			if got != tt.branch {
				t.Errorf("branch %s: %q, want %q", task.Branch, got, tt.branch)
			}
			if (tt.branch == "") != (res.Commit == "") {
				t.Errorf("result names commit %q; the repository has %q", res.Commit, got)
			}
			if tt.name == "nothing changed" && res.Branch != "" {
				t.Errorf("result names branch %q for a task that changed nothing", res.Branch)
			}
			if res.Commit != "" {
				if head := git(t, r.repo, "rev-parse", task.Branch); head != res.Commit {
					t.Errorf("result commit %s, branch head %s", res.Commit, head)
				}
			}
			if head := git(t, r.repo, "rev-parse", "HEAD"); head != git(t, r.repo, "rev-parse", "main") || git(t, r.repo, "status", "--porcelain") != "" {
				t.Errorf("the user's branch or worktree changed")
			}
			if finished := r.store.Finished(); finished[task.ID].Status != tt.want {
				t.Errorf("recorded status %q, want %q", finished[task.ID].Status, tt.want)
			}
		})
	}
}

// A sandbox that cannot start ends the task as sandbox_error, with
// nothing committed.
func TestSandboxThatDoesNotStart(t *testing.T) {
	r := newMemRun(t)
	r.backend.Fail = sandbox.ErrRefused
	task := r.task("no-sandbox")
	r.script(task.Model)
	res := r.run(context.Background(), []tasks.Task{task}, Options{}).Results[0]
	if res.Status != tasks.StatusSandboxError || !strings.Contains(res.Error, "start sandbox") || res.Commit != "" {
		t.Errorf("result %+v; want sandbox_error naming the start, no commit", res)
	}
	if got := branch(t, r.repo, task.Branch); got != "" {
		t.Errorf("branch made: %s", got)
	}
}

func policyProtecting(globs ...string) policy.Policy { return policy.Policy{Protected: globs} }
