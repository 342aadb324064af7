package main

import (
	"bufio"
	"encoding/json"
	"fmt"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/runner-dev/runner/internal/cli"
	"github.com/runner-dev/runner/internal/dockertest"
	"github.com/runner-dev/runner/internal/fakellm"
	"github.com/runner-dev/runner/tasks"
)

// attemptScripts answers each attempt of a best-of-n task from its own
// script. An attempt's first call is answered by asking the sandbox for
// RUNNER_ATTEMPT; later calls find the answer in the history, and the
// number of replies so far picks the turn.
func attemptScripts(t *testing.T, scripts map[string][]fakellm.Turn) *fakellm.Server {
	srv := fakellm.New(t)
	srv.Forever(fakellm.Func(func(r fakellm.Request) fakellm.Turn {
		replies, attempt := 0, ""
		for _, m := range r.Messages {
			switch {
			case m.Role == "assistant":
				replies++
			case m.Role == "tool" && attempt == "":
				if _, after, ok := strings.Cut(m.Content, "attempt="); ok {
					attempt = strings.Fields(after)[0]
				}
			}
		}
		if replies == 0 {
			return fakellm.ToolCall("run_command", `{"command":"echo attempt=$RUNNER_ATTEMPT"}`).WithUsage(int64(len(r.Body)/4), 20, 0)
		}
		turns := scripts[attempt]
		if replies-1 >= len(turns) {
			return fakellm.Status(500, `{"error":{"message":"the script of attempt `+attempt+` is over"}}`)
		}
		return turns[replies-1].WithUsage(int64(len(r.Body)/4), 50, 0)
	}))
	return srv
}

// Three attempts of which only the second passes the check: the binary
// keeps it on agent/<id>, leaves the others' work on their attempt
// branches (git reads them), records every attempt, tells of each one in
// its events, and `runner rollback --all` deletes every branch it made.
func TestBestOfThreeAttempts(t *testing.T) {
	repo, head := sourceRepo(t, map[string]string{"README.md": "# Helo\n"})
	srv := attemptScripts(t, map[string][]fakellm.Turn{
		"1": {edit("README.md", "Helo", "Hallo"), complete("Tried Hallo.")},
		"2": {edit("README.md", "Helo", "Hello"), complete("Fixed the heading.")},
		"3": {edit("README.md", "Helo", "Help"), complete("Tried Help.")},
	})
	file := writeTaskFile(t, fmt.Sprintf(`
defaults: {image: %s, budget_usd: 0.5, repo: %s}
tasks:
  - id: best
    prompt: Fix the heading.
    check: grep -q Hello README.md
    attempts: 3
    stop_on_success: false
`, dockertest.Busybox(t), repo))
	if res := runBinary(t, "validate", file); res.code != cli.ExitOK {
		t.Fatalf("runner validate: %s", res)
	}
	out := filepath.Join(t.TempDir(), "out")
	res, pid := runRunner(t, srv, "run", file, "--out", out, "--concurrency", "3", "--events")
	if res.code != cli.ExitOK {
		t.Fatalf("runner run: %s", res)
	}
	noLeftovers(t, pid)
	userRepoUnchanged(t, repo, head)

	lines := readResultLines(t, out)
	if len(lines) != 4 || lines[3].Try != 0 {
		t.Fatalf("results.jsonl has %d lines, want the three attempts then the task: %+v", len(lines), lines)
	}
	task := lines[3]
	if task.Status != tasks.StatusSucceeded || task.Kept != 2 || task.Branch != "agent/best" || len(task.Tries) != 3 {
		t.Fatalf("task line: %+v", task)
	}
	want := map[int]string{1: "check_failed # Hallo", 2: "succeeded # Hello", 3: "check_failed # Help"}
	var total float64
	for _, l := range lines[:3] {
		branch := fmt.Sprintf("agent/best-attempt-%d", l.Try)
		if l.Branch != branch || l.BestOf != 3 {
			t.Errorf("attempt %d: branch %q, best_of %d", l.Try, l.Branch, l.BestOf)
		}
		if got := string(l.Status) + " " + gitCLI(t, repo, "show", branch+":README.md"); got != want[l.Try] {
			t.Errorf("attempt %d: %q, want %q", l.Try, got, want[l.Try])
		}
		if got := gitCLI(t, repo, "rev-parse", branch); got != l.Commit {
			t.Errorf("%s at %s, its line names %s", branch, got, l.Commit)
		}
		if s := task.Tries[l.Try-1]; s.Status != l.Status || s.Commit != l.Commit || s.Chosen != (l.Try == 2) {
			t.Errorf("the task line sums up attempt %d as %+v; its own line %+v", l.Try, s, l)
		}
		total += l.CostUSD
	}
	if got := gitCLI(t, repo, "rev-parse", "agent/best"); got != task.Commit || got != task.Tries[1].Commit {
		t.Errorf("agent/best at %s; the task line names %s", got, task.Commit)
	}
	if task.CostUSD < total*0.999999 || task.CostUSD > total*1.000001 || task.CostUSD > 0.5 {
		t.Errorf("task cost $%v, its attempts $%v", task.CostUSD, total)
	}

	// Each attempt's events carry its number.
	tries := map[string]map[int]bool{}
	sc := bufio.NewScanner(strings.NewReader(res.stdout))
	for sc.Scan() {
		var ev struct {
			Event string `json:"event"`
			Try   int    `json:"try"`
		}
		if err := json.Unmarshal(sc.Bytes(), &ev); err != nil {
			t.Fatalf("event %q: %v", sc.Text(), err)
		}
		if tries[ev.Event] == nil {
			tries[ev.Event] = map[int]bool{}
		}
		tries[ev.Event][ev.Try] = true
	}
	for _, e := range []string{"attempt_started", "attempt_finished", "step", "phase"} {
		if !tries[e][1] || !tries[e][2] || !tries[e][3] || tries[e][0] {
			t.Errorf("%s events came for attempts %v, want 1, 2 and 3 only", e, tries[e])
		}
	}

	// show lists every attempt.
	if res := runBinary(t, "show", out, "best"); res.code != cli.ExitOK ||
		!strings.Contains(res.stdout, "agent/best-attempt-1") || !strings.Contains(res.stdout, "agent/best-attempt-3") {
		t.Errorf("runner show: %s", res)
	}

	// rollback deletes the task's branch and every attempt branch.
	if res := runBinary(t, "rollback", "--out", out, "--all"); res.code != cli.ExitOK {
		t.Fatalf("runner rollback: %s", res)
	}
	if left := gitCLI(t, repo, "for-each-ref", "--format=%(refname)", "refs/heads/agent/"); left != "" {
		t.Errorf("branches left after rollback:\n%s", left)
	}
	userRepoUnchanged(t, repo, head)
}

// With stop_on_success, the attempt that passes stops one still running a
// command in its sandbox: the slow attempt ends as cancelled (its
// attempt_finished event says so), its container is removed, and the edit
// it made before is committed on its attempt branch. The passing attempt
// makes its edit only once the slow one's command was handed out.
func TestStopOnSuccessStopsARunningSandbox(t *testing.T) {
	repo, head := sourceRepo(t, map[string]string{"README.md": "# Helo\n"})
	slow := make(chan struct{})
	var once sync.Once
	srv := attemptScripts(t, map[string][]fakellm.Turn{
		"1": {edit("README.md", "Helo", "Hallo"), fakellm.Func(func(fakellm.Request) fakellm.Turn {
			once.Do(func() { close(slow) })
			return fakellm.ToolCall("run_command", `{"command":"sleep 600"}`)
		})},
		"2": {fakellm.Func(func(fakellm.Request) fakellm.Turn {
			select {
			case <-slow:
			case <-time.After(5 * time.Minute): // the test fails below
			}
			return edit("README.md", "Helo", "Hello")
		}), complete("Fixed the heading.")},
	})
	file := writeTaskFile(t, fmt.Sprintf(`
defaults: {image: %s, budget_usd: 0.5, repo: %s}
tasks:
  - id: race
    prompt: Fix the heading.
    check: grep -q Hello README.md
    attempts: 2
    timeout: 3m
`, dockertest.Busybox(t), repo))
	out := filepath.Join(t.TempDir(), "out")
	res, pid := runRunner(t, srv, "run", file, "--out", out, "--concurrency", "2", "--events")
	if res.code != cli.ExitOK {
		t.Fatalf("runner run: %s", res)
	}
	noLeftovers(t, pid)
	userRepoUnchanged(t, repo, head)
	task := readResultLines(t, out)[2]
	if task.Kept != 2 || task.Tries[0].Status != tasks.StatusCancelled || !strings.Contains(task.Tries[0].Error, "attempt 2") {
		t.Fatalf("task line: %+v", task)
	}
	if got := gitCLI(t, repo, "show", "agent/race-attempt-1:README.md"); got != "# Hallo" {
		t.Errorf("the cancelled attempt's branch holds %q", got)
	}
	if got := gitCLI(t, repo, "log", "-1", "--format=%(trailers:key=Runner-Status,valueonly)", "agent/race-attempt-1"); got != "cancelled" {
		t.Errorf("its commit says status %q", got)
	}
	if !strings.Contains(res.stdout, `"event":"attempt_finished","task":"race","try":1,"result":{`) ||
		!strings.Contains(res.stdout, `"best_of":2,"try":1`) {
		t.Errorf("no attempt_finished event for the cancelled attempt:\n%s", res.stdout)
	}
}
