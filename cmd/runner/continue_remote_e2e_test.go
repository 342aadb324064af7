package main

import (
	"fmt"
	"path/filepath"
	"strings"
	"testing"

	"github.com/runner-dev/runner/internal/cli"
	"github.com/runner-dev/runner/internal/dockertest"
	"github.com/runner-dev/runner/internal/fakellm"
	"github.com/runner-dev/runner/tasks"
)

// A task on a remote repository that pushed its unfinished work is
// continued from the remote's branch: the new attempt succeeds within its
// new cap and the remote's branch moves forward by one commit (a
// fast-forward); one that did not push is refused, naming push: true, and
// so is one whose remote branch someone moved.
func TestContinueRemoteTask(t *testing.T) {
	src, head := sourceRepo(t, map[string]string{"README.md": "# Helo\n"})
	bare := filepath.Join(t.TempDir(), "remote.git")
	gitCLI(t, filepath.Dir(bare), "clone", "-q", "--bare", src, bare)
	srv, scripts := modelServer(t, map[string][]fakellm.Turn{
		"(kept)":  {edit("README.md", "Helo", "Hallo"), fakellm.ToolCall("run_command", `{"command":"cat README.md"}`)},
		"(lost)":  {edit("README.md", "Helo", "Hallo"), fakellm.ToolCall("run_command", `{"command":"cat README.md"}`)},
		"(moved)": {edit("README.md", "Helo", "Hallo"), fakellm.ToolCall("run_command", `{"command":"cat README.md"}`)},
	})
	file := writeTaskFile(t, fmt.Sprintf(`
defaults: {image: %s, budget_usd: 0.5, repo: "file://%s", max_steps: 2, check: grep -q Hello README.md}
tasks:
  - {id: kept, prompt: "Fix the heading (kept).", push: true}
  - {id: lost, prompt: "Fix the heading (lost)."}
  - {id: moved, prompt: "Fix the heading (moved).", push: true}
`, dockertest.Busybox(t), bare))
	out := filepath.Join(t.TempDir(), "out")
	res, pid1 := runRunner(t, srv, "run", file, "--out", out, "-j", "3")
	if res.code != cli.ExitFailure {
		t.Fatalf("runner run: %s", res)
	}
	scripts.left(t)
	results := byID(readResultLines(t, out))
	first := results["kept"]
	if first.Status != tasks.StatusStepLimit || !first.Pushed || gitCLI(t, bare, "rev-parse", "agent/kept") != first.Commit {
		t.Fatalf("first attempt of kept: %+v", first)
	}
	if r := results["lost"]; r.Status != tasks.StatusStepLimit || r.Pushed || r.Commit == "" {
		t.Fatalf("first attempt of lost: %+v", r)
	}

	// Refused: the work of lost was never pushed, so it is nowhere.
	if res, _ := runContinue(t, srv, "--out", out, "lost"); res.code != cli.ExitUsage ||
		!strings.Contains(res.stderr, "task lost") || !strings.Contains(res.stderr, "push: true") {
		t.Errorf("continuing a remote task that did not push: %s", res)
	}
	// Refused: someone moved the remote's branch of moved.
	gitCLI(t, bare, "branch", "-f", "agent/moved", head)
	if res, _ := runContinue(t, srv, "--out", out, "moved"); res.code != cli.ExitUsage ||
		!strings.Contains(res.stderr, "task moved") || !strings.Contains(res.stderr, "moved on file://"+bare) {
		t.Errorf("continuing a remote task whose branch moved: %s", res)
	}

	scripts.mu.Lock()
	scripts.scripts["(kept)"] = []fakellm.Turn{edit("README.md", "Hallo", "Hello"), complete("Fixed the heading.")}
	scripts.mu.Unlock()
	res, pid2 := runContinue(t, srv, "--out", out, "kept", "--max-steps", "5", "--budget", "0.2")
	if res.code != cli.ExitOK {
		t.Fatalf("runner continue: %s", res)
	}
	scripts.left(t)
	lines := readResultLines(t, out)
	second := lines[len(lines)-1]
	if len(lines) != 4 || second.ID != "kept" || second.Status != tasks.StatusSucceeded || second.Attempt != 2 || second.Continues != 1 ||
		second.Branch != first.Branch || !second.Pushed || second.Base != first.Base || second.CostUSD > 0.2 {
		t.Fatalf("second attempt of kept (of %d results): %+v", len(lines), second)
	}
	// git is the reader: the remote's branch moved forward by one commit.
	if got := gitCLI(t, bare, "rev-parse", "agent/kept"); got != second.Commit {
		t.Errorf("agent/kept is at %s on the remote, the result names %s", got, second.Commit)
	}
	if got := gitCLI(t, bare, "rev-parse", "agent/kept^"); got != first.Commit {
		t.Errorf("the parent of the new commit is %s, want the first attempt's %s", got, first.Commit)
	}
	if got := gitCLI(t, bare, "show", "agent/kept:README.md"); got != "# Hello" {
		t.Errorf("README.md on the remote's branch: %q", got)
	}
	if got := gitCLI(t, bare, "rev-parse", "main"); got != head {
		t.Errorf("the remote's main moved to %s", got)
	}
	gitCLI(t, bare, "fsck", "--strict")
	noLeftovers(t, pid1, pid2)
}
