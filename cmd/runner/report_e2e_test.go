package main

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/runner-dev/runner/internal/cli"
	"github.com/runner-dev/runner/internal/dockertest"
	"github.com/runner-dev/runner/internal/fakellm"
	"github.com/runner-dev/runner/tasks"
)

// Texts an attacker would slip into the report through the agent or the
// repository: each runs script or adds an element if it reaches a page as
// HTML.
const (
	evilFile     = `<img src=x onerror=alert(1)>.txt`
	evilOutput   = `<svg onload=alert(2)>`
	evilSummary  = `Done. </script><script>alert(3)</script>`
	evilBranch   = `agent/x'"><svg/onload=alert(4)>`
	evilQuestion = `<b>Which</b> file? </script><iframe src=x>`
)

// reportRun is a real run of five tasks against the scripted model on the
// busybox image, each ending differently, one of them full of hostile
// text: the fixture of the report's tests.
type reportRun struct {
	out            string
	repoA, repoB   string
	results        map[string]tasks.Result
	stdout, stderr string
}

func runForReport(t *testing.T) *reportRun {
	t.Helper()
	repoA, _ := sourceRepo(t, map[string]string{"README.md": "# Helo\n", "src/app.txt": "v1\n"})
	repoB, _ := sourceRepo(t, map[string]string{"NOTES.md": "todo\n"})
	cmd := func(c string) fakellm.Turn {
		return fakellm.ToolCall("run_command", fmt.Sprintf(`{"command":%q}`, c))
	}
	srv, scripts := modelServer(t, map[string][]fakellm.Turn{
		"heading": {fakellm.ServerError(500), edit("README.md", "Helo", "Hello"), complete("Fixed the heading.")},
		"hostile": {
			cmd("echo made > '" + evilFile + "'"),
			cmd("echo '" + evilOutput + "'"),
			cmd("rm -rf /workspace/src"),
			fakellm.ToolCall("ask_question", fmt.Sprintf(`{"question":%q}`, evilQuestion)),
			complete(evilSummary),
		},
		"forever": {
			fakellm.ToolCall("write_file", `{"path":"one.txt","content":"1\n"}`),
			fakellm.ToolCall("write_file", `{"path":"two.txt","content":"2\n"}`),
		},
		"refused": {fakellm.Unauthorized()},
		"notes":   {edit("NOTES.md", "todo", "todo: ship"), complete("Planned.")},
	})
	file := writeTaskFile(t, fmt.Sprintf(`
defaults: {image: %s, budget_usd: 0.5, repo: %s}
tasks:
  - id: fix-heading
    prompt: Fix the typo in the heading.
    check: grep -q Hello README.md
  - id: hostile
    prompt: "Do the hostile <b onmouseover=alert(5)>thing</b>."
    branch: "%s"
    check: test -f never-there
    deny_commands: ["rm -rf"]
  - id: steps
    prompt: Work forever.
    max_steps: 2
  - id: broken
    prompt: This one is refused.
  - id: notes
    repo: %s
    prompt: Write the notes.
`, dockertest.Busybox(t), repoA, strings.ReplaceAll(evilBranch, `"`, `\"`), repoB))
	out := filepath.Join(t.TempDir(), "out")
	res, pid := runRunner(t, srv, "run", file, "--out", out, "-j", "2", "--run-budget", "5")
	if res.code != cli.ExitFailure {
		t.Fatalf("runner run: %s", res)
	}
	scripts.left(t)
	noLeftovers(t, pid)
	r := &reportRun{out: out, repoA: repoA, repoB: repoB, results: byID(readResultLines(t, out)), stdout: res.stdout, stderr: res.stderr}
	want := map[string]tasks.Status{"fix-heading": tasks.StatusSucceeded, "hostile": tasks.StatusCheckFailed,
		"steps": tasks.StatusStepLimit, "broken": tasks.StatusModelError, "notes": tasks.StatusSucceeded}
	for id, status := range want {
		if got := r.results[id]; got.Status != status {
			t.Fatalf("%s ended %s (%s), want %s", id, got.Status, got.Error, status)
		}
	}
	if h := r.results["hostile"]; h.Branch != evilBranch || h.Commit == "" || h.Summary != evilSummary {
		t.Fatalf("the hostile task's result: %+v", h)
	}
	return r
}

// Every run writes its report: an index and a page per task, named in the
// summary; `runner report` writes it again, elsewhere if asked.
func TestRunWritesItsReport(t *testing.T) {
	r := runForReport(t)
	index := filepath.Join(r.out, "report", "index.html")
	if !strings.Contains(r.stdout, "report: "+index) {
		t.Errorf("the summary does not name the report:\n%s", r.stdout)
	}
	for id := range r.results {
		if _, err := os.Stat(filepath.Join(r.out, "report", "tasks", id+".html")); err != nil {
			t.Errorf("no page for %s: %v", id, err)
		}
	}
	data, err := os.ReadFile(index)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(data), "Content-Security-Policy") || strings.Contains(string(data), evilSummary) {
		t.Errorf("the index is not what the report package writes")
	}
	to := filepath.Join(t.TempDir(), "elsewhere")
	res := runBinary(t, "report", r.out, "--to", to)
	if res.code != cli.ExitOK || !strings.Contains(res.stdout, filepath.Join(to, "index.html")) {
		t.Fatalf("runner report: %s", res)
	}
	again, err := os.ReadFile(filepath.Join(to, "tasks", "hostile.html"))
	if err != nil || !strings.Contains(string(again), "&lt;img src=x onerror=alert(1)&gt;.txt") {
		t.Errorf("runner report --to did not write the hostile task's page: %v", err)
	}
	if res := runBinary(t, "report", filepath.Join(t.TempDir(), "nowhere")); res.code != cli.ExitFailure || !strings.Contains(res.stderr, "nowhere") {
		t.Errorf("runner report of a missing directory: %s", res)
	}
	checkShow(t, r)
	checkReportInBrowser(t, r)
	checkThousandTasks(t, r)
}
