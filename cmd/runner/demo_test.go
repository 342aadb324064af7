package main

import (
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"testing"

	"github.com/runner-dev/runner/internal/cli"
	"github.com/runner-dev/runner/internal/dockertest"
	"github.com/runner-dev/runner/internal/fakellm"
	"github.com/runner-dev/runner/tasks"
)

// repoRoot is the root of this source tree.
func repoRoot(t *testing.T) string {
	_, file, _, _ := runtime.Caller(0)
	return filepath.Join(filepath.Dir(file), "..", "..")
}

// demoScript is what the model does in the demo, as recorded in
// examples/demo/recording.jsonl.
func demoScript() []fakellm.Turn {
	return []fakellm.Turn{
		fakellm.ToolCall("list_files", `{"path":"."}`).WithContent("Let me look at the repository first.").WithUsage(1850, 40, 0),
		fakellm.ToolCall("read_file", `{"path":"words.py"}`).WithUsage(1920, 30, 1792),
		fakellm.ToolCall("run_command", `{"command":"python3 -m unittest -q","timeout":60}`).
			WithContent("split(\" \") splits on single spaces only. Let me see which tests fail first.").WithUsage(2010, 60, 1920),
		fakellm.ToolCall("edit_file", `{"path":"words.py","old_string":"    return len(text.split(\" \"))","new_string":"    return len(text.split())"}`).
			WithContent("Three tests fail as described. str.split() with no argument splits on any run of whitespace and drops empty strings, which fixes all of them.").
			WithUsage(2600, 90, 2048),
		fakellm.ToolCall("run_command", `{"command":"python3 -m unittest -q","timeout":60}`).WithUsage(2700, 30, 2560),
		fakellm.ToolCall("complete", `{"summary":"word_count split on single spaces only, so runs of spaces, tabs and newlines produced empty words and an empty text counted as one word. It now uses str.split() with no separator, which splits on any run of whitespace. Verified with python3 -m unittest: all 4 tests pass."}`).
			WithUsage(2800, 80, 2688),
	}
}

// Regenerates examples/demo/recording.jsonl from a real run of the demo
// against the scripted model: RUNNER_RECORD_DEMO=1 go test ./cmd/runner -run TestRecordDemo
func TestRecordDemo(t *testing.T) {
	if os.Getenv("RUNNER_RECORD_DEMO") != "1" {
		t.Skip("set RUNNER_RECORD_DEMO=1 to regenerate examples/demo/recording.jsonl")
	}
	root := repoRoot(t)
	work := t.TempDir()
	os.CopyFS(filepath.Join(work, "repo"), os.DirFS(filepath.Join(root, "examples/demo/repo")))
	gitCLI(t, work, "init", "-q", "repo")
	gitCLI(t, filepath.Join(work, "repo"), "add", "-A")
	gitCLI(t, filepath.Join(work, "repo"), "commit", "-q", "-m", "words: first version")
	b, _ := os.ReadFile(filepath.Join(root, "examples/demo/tasks.yaml"))
	writeFile(t, filepath.Join(work, "tasks.yaml"), string(b))
	srv := fakellm.New(t, demoScript()...)
	out := filepath.Join(work, "out")
	res, _ := runRunner(t, srv, "run", filepath.Join(work, "tasks.yaml"), "--out", out, "--image", dockertest.SandboxImage(t))
	if res.code != cli.ExitOK {
		t.Fatalf("recording run: %s", res)
	}
	rec, err := os.ReadFile(filepath.Join(out, "trajectories", "fix-word-count.1.jsonl"))
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(root, "examples/demo/recording.jsonl"), rec, 0o644); err != nil {
		t.Fatal(err)
	}
}

// The demo of the README, run as a newcomer would: examples/demo.sh. Its
// branch changes words.py and nothing else.
func TestDemoFromReadme(t *testing.T) {
	root := repoRoot(t)
	work := t.TempDir()
	cmd := exec.Command("bash", filepath.Join(root, "examples/demo.sh"))
	cmd.Dir = root
	cmd.Env = append(os.Environ(), "RUNNER_DEMO_DIR="+work, "RUNNER_SANDBOX_IMAGE="+dockertest.SandboxImage(t), "NO_COLOR=1")
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("examples/demo.sh: %v\n%s", err, out)
	}
	for _, want := range []string{"fix-word-count", "succeeded", "-    return len(text.split(\" \"))", "+    return len(text.split())"} {
		if !strings.Contains(string(out), want) {
			t.Errorf("demo output lacks %q:\n%s", want, out)
		}
	}
	rs := readResultLines(t, filepath.Join(work, "out"))
	if len(rs) != 1 || rs[0].Status != tasks.StatusSucceeded || rs[0].Commit == "" {
		t.Errorf("demo results = %+v", rs)
	}
	// The branch holds the agent's edit only: no bytecode from the
	// agent's test runs or the check.
	if len(rs) == 1 && rs[0].Commit != "" {
		tree := gitCLI(t, filepath.Join(work, "repo"), "ls-tree", "-r", "--name-only", rs[0].Commit)
		if strings.Contains(tree, "__pycache__") || strings.Contains(tree, ".pyc") {
			t.Errorf("the demo's branch carries bytecode:\n%s", tree)
		}
		if changed := gitCLI(t, filepath.Join(work, "repo"), "diff", "--name-only", rs[0].Base, rs[0].Commit); changed != "words.py" {
			t.Errorf("the demo's branch changes %q, want words.py only", changed)
		}
	}
	if got := gitCLI(t, filepath.Join(work, "repo"), "status", "--porcelain"); got != "" {
		t.Errorf("the demo touched the worktree:\n%s", got)
	}
	// The demo's runner ran as a grandchild; its sandboxes carry the
	// task's label.
	if out, _ := exec.Command("docker", "ps", "-a", "--filter", "label=dev.runner.task=fix-word-count", "-q").Output(); len(out) > 0 {
		t.Errorf("the demo left containers: %s", out)
	}
}
