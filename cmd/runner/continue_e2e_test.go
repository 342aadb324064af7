package main

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/runner-dev/runner/internal/cli"
	"github.com/runner-dev/runner/internal/dockertest"
	"github.com/runner-dev/runner/internal/fakellm"
	"github.com/runner-dev/runner/tasks"
)

// runContinue runs `runner continue` with the model endpoint in its
// environment, ended with the test.
func runContinue(t *testing.T, srv *fakellm.Server, args ...string) (cmdResult, int) {
	t.Helper()
	cmd := exec.CommandContext(t.Context(), runnerBinary(t), append([]string{"continue"}, args...)...)
	cmd.Env = append(os.Environ(), "OPENAI_BASE_URL="+srv.URL(), "OPENAI_API_KEY="+e2eKey, "RUNNER_MODEL=gpt-4o-mini", "NO_COLOR=1")
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	err := cmd.Run()
	res := cmdResult{stdout: stdout.String(), stderr: stderr.String()}
	var exit *exec.ExitError
	if errors.As(err, &exit) {
		res.code = exit.ExitCode()
	} else if err != nil {
		t.Fatal(err)
	}
	return res, cmd.Process.Pid
}

// messagesOf returns the messages of a request body exactly as received.
func messagesOf(t *testing.T, r fakellm.Request) []json.RawMessage {
	t.Helper()
	var body struct {
		Messages []json.RawMessage `json:"messages"`
	}
	if err := json.Unmarshal(r.Body, &body); err != nil {
		t.Fatal(err)
	}
	return body.Messages
}

// A task that ran out of steps is continued: the second attempt goes on
// with the first one's history (sent again byte for byte), succeeds, and
// moves the same branch forward by one commit; the report and show list
// both attempts, a rerun does not run the task again, and what cannot be
// continued is refused.
func TestContinueRanOutTask(t *testing.T) {
	repo, head := sourceRepo(t, map[string]string{"README.md": "# Helo\n"})
	srv, scripts := modelServer(t, map[string][]fakellm.Turn{
		"ran-out": {
			edit("README.md", "Helo", "Hallo"),
			fakellm.ToolCall("run_command", `{"command":"cat README.md"}`),
		},
	})
	file := writeTaskFile(t, fmt.Sprintf(`
defaults: {image: %s, budget_usd: 0.5, repo: %s}
tasks:
  - id: ran-out
    prompt: Fix the heading (ran-out).
    max_steps: 2
    check: grep -q Hello README.md
`, dockertest.Busybox(t), repo))
	out := filepath.Join(t.TempDir(), "out")
	res, pid1 := runRunner(t, srv, "run", file, "--out", out)
	if res.code != cli.ExitFailure {
		t.Fatalf("runner run: %s", res)
	}
	first := byID(readResultLines(t, out))["ran-out"]
	if first.Status != tasks.StatusStepLimit || first.Commit == "" {
		t.Fatalf("first attempt: %+v", first)
	}
	scripts.left(t)
	sentBefore := len(srv.Requests())

	// Refused: a task the out directory does not hold.
	if res, _ := runContinue(t, srv, "--out", out, "nope"); res.code != cli.ExitUsage ||
		!strings.Contains(res.stderr, "task nope") || !strings.Contains(res.stderr, "results.jsonl") {
		t.Errorf("continuing an unknown task: %s", res)
	}

	scripts.mu.Lock()
	scripts.scripts["ran-out"] = []fakellm.Turn{edit("README.md", "Hallo", "Hello"), complete("Fixed the heading.")}
	scripts.mu.Unlock()
	res, pid2 := runContinue(t, srv, "--out", out, "ran-out", "--max-steps", "5", "--budget", "0.2",
		"--prompt", "The heading should read Hello.")
	if res.code != cli.ExitOK {
		t.Fatalf("runner continue: %s", res)
	}
	scripts.left(t)
	lines := readResultLines(t, out)
	if len(lines) != 2 {
		t.Fatalf("results.jsonl has %d lines, want 2", len(lines))
	}
	second := lines[1]
	if second.Status != tasks.StatusSucceeded || second.Attempt != 2 || second.Continues != 1 ||
		second.Branch != first.Branch || second.Commit == "" || second.CostUSD > 0.2 {
		t.Fatalf("second attempt: %+v", second)
	}
	// git is the reader: the branch moved forward by one commit.
	if got := gitCLI(t, repo, "rev-parse", first.Branch); got != second.Commit {
		t.Errorf("%s is at %s, the result names %s", first.Branch, got, second.Commit)
	}
	if got := gitCLI(t, repo, "rev-parse", first.Branch+"^"); got != first.Commit {
		t.Errorf("the parent of the new commit is %s, want the first attempt's %s", got, first.Commit)
	}
	if got := gitCLI(t, repo, "show", first.Branch+":README.md"); got != "# Hello" {
		t.Errorf("README.md on the branch: %q", got)
	}
	userRepoUnchanged(t, repo, head)

	// The continuation's first request starts with the messages of the
	// first attempt's last request, byte for byte.
	reqs := srv.Requests()
	before, after := messagesOf(t, reqs[sentBefore-1]), messagesOf(t, reqs[sentBefore])
	if len(after) <= len(before) {
		t.Fatalf("the continuation sent %d messages, the last request before %d", len(after), len(before))
	}
	for i := range before {
		if !bytes.Equal(before[i], after[i]) {
			t.Errorf("message %d differs:\nbefore %s\nafter  %s", i, before[i], after[i])
		}
	}
	if last := string(after[len(after)-1]); !strings.Contains(last, "The heading should read Hello.") {
		t.Errorf("the last message sent is not the continuation's prompt: %s", last)
	}
	if strings.Contains(string(reqs[sentBefore].Body), e2eKey) {
		t.Errorf("the API key was sent in a request body")
	}

	// show and the report list both attempts.
	if res := runBinary(t, "show", out, "ran-out"); res.code != cli.ExitOK ||
		!strings.Contains(res.stdout, "attempt 2 of 2") || !strings.Contains(res.stdout, "continues: attempt 1") {
		t.Errorf("runner show: %s", res)
	}
	if res := runBinary(t, "show", out, "ran-out", "--attempt", "1"); res.code != cli.ExitOK || !strings.Contains(res.stdout, "step_limit") {
		t.Errorf("runner show --attempt 1: %s", res)
	}
	page, err := os.ReadFile(filepath.Join(out, "report", "tasks", "ran-out.html"))
	if err != nil || !strings.Contains(string(page), "2 attempt(s)") || !strings.Contains(string(page), "Earlier attempt 1") {
		t.Errorf("the report's page of ran-out does not list both attempts (%v)", err)
	}

	// Refused: the task succeeded.
	if res, _ := runContinue(t, srv, "--out", out, "ran-out"); res.code != cli.ExitUsage ||
		!strings.Contains(res.stderr, "task ran-out") || !strings.Contains(res.stderr, "succeeded") {
		t.Errorf("continuing a task that succeeded: %s", res)
	}
	// A rerun of the queue does not run the continued task again.
	sent := len(srv.Requests())
	res, pid3 := runRunner(t, srv, "run", file, "--out", out)
	if res.code != cli.ExitOK || len(srv.Requests()) != sent || len(readResultLines(t, out)) != 2 {
		t.Errorf("rerun: %s\n(%d requests, want %d)", res, len(srv.Requests()), sent)
	}
	gitCLI(t, repo, "fsck", "--strict")
	noLeftovers(t, pid1, pid2, pid3)
}
