package batch

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/runner-dev/runner/agent"
	"github.com/runner-dev/runner/budget"
	"github.com/runner-dev/runner/internal/dockertest"
	"github.com/runner-dev/runner/internal/fakellm"
	"github.com/runner-dev/runner/sandbox"
	"github.com/runner-dev/runner/tasks"
)

func TestMain(m *testing.M) { os.Exit(dockertest.Main(m)) }

// git runs the git CLI, the independent reader of what runner wrote.
func git(t *testing.T, dir string, args ...string) string {
	t.Helper()
	cmd := exec.Command("git", args...)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "GIT_CONFIG_GLOBAL=/dev/null", "GIT_CONFIG_NOSYSTEM=1",
		"GIT_AUTHOR_NAME=t", "GIT_AUTHOR_EMAIL=t@t", "GIT_COMMITTER_NAME=t", "GIT_COMMITTER_EMAIL=t@t")
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("git %s: %v\n%s", strings.Join(args, " "), err, out)
	}
	return strings.TrimSpace(string(out))
}

func fixtureRepo(t *testing.T) string {
	t.Helper()
	dir := t.TempDir()
	git(t, dir, "init", "-q", "-b", "main")
	os.WriteFile(filepath.Join(dir, "README.md"), []byte("# Helo\n"), 0o644)
	git(t, dir, "add", "-A")
	git(t, dir, "commit", "-q", "-m", "first")
	return dir
}

func deps(t *testing.T, store *tasks.Store, srv *fakellm.Server) Deps {
	e := dockertest.Engine(t)
	return Deps{
		Store: store,
		StartSandbox: func(ctx context.Context, cfg sandbox.Config) (sandbox.Sandbox, error) {
			return e.Start(ctx, cfg)
		},
		ImageExists: e.ImageExists,
		NewModel: func(_ tasks.Task, traj *agent.Trajectory) (agent.Model, error) {
			return agent.NewOpenAI(agent.OpenAIConfig{BaseURL: srv.URL(), APIKey: "sk-batch-test-key-123456"})
		},
		Prices:  budget.DefaultPrices(),
		Secrets: []string{"sk-batch-test-key-123456"},
	}
}

func TestTaskWithCheckRetryEndsOnABranch(t *testing.T) {
	repo := fixtureRepo(t)
	head := git(t, repo, "rev-parse", "HEAD")
	store, err := tasks.OpenStore(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	defer store.Close()
	srv := fakellm.New(t,
		fakellm.ToolCall("complete", `{"summary":"nothing to do"}`),
		fakellm.ToolCall("edit_file", `{"path":"README.md","old_string":"Helo","new_string":"Hello"}`),
		fakellm.ToolCall("complete", `{"summary":"Fixed the typo in the heading."}`),
	)
	queue := []tasks.Task{{
		ID: "typo", Repo: repo, Prompt: "Fix the typo.", Check: "grep -q Hello README.md", CheckRetries: 1,
		Image: dockertest.Busybox(t), Model: "gpt-4o-mini", BudgetUSD: 1,
	}}
	sum, err := Run(context.Background(), queue, Options{RunID: dockertest.RunID}, deps(t, store, srv))
	if err != nil {
		t.Fatal(err)
	}
	r := sum.Results[0]
	if r.Status != tasks.StatusSucceeded || r.Branch != "agent/typo" || r.Commit == "" || r.Base != head || r.Steps != 3 {
		t.Fatalf("result = %+v", r)
	}
	if got := git(t, repo, "show", "agent/typo:README.md"); got != "# Hello" {
		t.Errorf("README.md on the branch = %q", got)
	}
	if got := git(t, repo, "log", "-1", "--format=%P", "agent/typo"); got != head {
		t.Errorf("branch parent = %s, want the base %s", got, head)
	}
	msg := git(t, repo, "log", "-1", "--format=%B", "agent/typo")
	for _, want := range []string{"runner: typo", "Fixed the typo in the heading.", "Runner-Task: typo", "Runner-Status: succeeded"} {
		if !strings.Contains(msg, want) {
			t.Errorf("commit message lacks %q:\n%s", want, msg)
		}
	}
	if got := git(t, repo, "rev-parse", "HEAD"); got != head {
		t.Errorf("the user's HEAD moved to %s", got)
	}
	if got := git(t, repo, "status", "--porcelain"); got != "" {
		t.Errorf("the user's worktree changed:\n%s", got)
	}
	git(t, repo, "fsck", "--strict")
	// The failed check went back to the model.
	if feedback := srv.Requests()[1].Messages; !strings.Contains(feedback[len(feedback)-1].Content, "grep -q Hello README.md") {
		t.Errorf("the check's failure was not fed back: %q", feedback[len(feedback)-1].Content)
	}
}
