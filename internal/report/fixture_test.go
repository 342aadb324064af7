package report

import (
	"bytes"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/runner-dev/runner/agent"
	"github.com/runner-dev/runner/tasks"
)

// Hostile texts: each would run script or add an element if it reached
// the page as HTML.
const (
	hostileFile    = `<img src=x onerror=alert(1)>.txt`
	hostileContent = `<svg onload=alert(2)>`
	hostileSummary = `done </script><script>alert(3)</script> <!-- ]]>`
	hostileError   = `failed: <img src=x onerror=alert(4)>`
	hostileBranch  = `agent/x'"><svg/onload=alert(5)>`
	hostileOutput  = "<svg onload=alert(6)>\n</pre></div><script>alert(7)</script>"
	hostileArgs    = `{"command":"echo '</script><img src=x onerror=alert(8)>'"}`
	hostilePrompt  = `Fix <b onmouseover=alert(9)>it</b>`
	// hostileExcluded is a path the exclude list left out.
	hostileExcluded = `__pycache__/<img src=x onerror=alert(10)>.pyc`
	// hostileWarning is a warning naming a path of the repository.
	hostileWarning = `nested repository vendor/<img src=x onerror=alert(11)>/ left out`
)

// git runs the git CLI in dir.
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

// fixtureOut makes an out directory with a hostile task, whose branch
// adds a hostile file, and a plain one, and returns it and the commit.
func fixtureOut(t *testing.T) (out, commit string) {
	t.Helper()
	repo := filepath.Join(t.TempDir(), "repo")
	git(t, filepath.Dir(repo), "init", "-q", "-b", "main", repo)
	os.WriteFile(filepath.Join(repo, "README.md"), []byte("# Helo\n"), 0o644)
	git(t, repo, "add", "-A")
	git(t, repo, "commit", "-q", "-m", "first")
	base := git(t, repo, "rev-parse", "HEAD")
	git(t, repo, "checkout", "-q", "-b", hostileBranch)
	os.WriteFile(filepath.Join(repo, hostileFile), []byte(hostileContent+"\n"), 0o644)
	os.WriteFile(filepath.Join(repo, "README.md"), []byte("# Hello\n"), 0o644)
	git(t, repo, "add", "-A")
	git(t, repo, "commit", "-q", "-m", "work")
	commit = git(t, repo, "rev-parse", "HEAD")
	git(t, repo, "checkout", "-q", "main")

	out = filepath.Join(t.TempDir(), "out")
	os.MkdirAll(filepath.Join(out, "trajectories"), 0o755)
	start := time.Date(2026, 12, 1, 10, 0, 0, 0, time.UTC)
	results := []tasks.Result{
		{ID: "hostile", Attempt: 1, Status: tasks.StatusCheckFailed, Repo: repo, Base: base, Branch: hostileBranch,
			Commit: commit, CostUSD: 0.0123, Tokens: tasks.Tokens{In: 3000, Cached: 1000, Out: 200}, Calls: 3, Steps: 3,
			Duration: tasks.Duration(95 * time.Second), StartedAt: start, FinishedAt: start.Add(95 * time.Second),
			Error: hostileError, Summary: hostileSummary, Questions: []string{"<b>which</b> one?"},
			Excluded: []string{"__pycache__/", hostileExcluded}, ExcludedMore: 3, ExcludedFiles: 9,
			Warnings: []string{hostileWarning}, BudgetUSD: 0.05, BudgetShare: 0.246},
		{ID: "plain", Attempt: 1, Status: tasks.StatusInterrupted, Repo: repo, StartedAt: start, FinishedAt: start.Add(time.Second)},
		{ID: "plain", Attempt: 2, Status: tasks.StatusSucceeded, Repo: repo, CostUSD: 0.002, Steps: 1,
			Duration: tasks.Duration(3 * time.Second), StartedAt: start.Add(time.Minute), FinishedAt: start.Add(time.Minute + 3*time.Second)},
	}
	var lines bytes.Buffer
	for _, r := range results {
		b, _ := json.Marshal(r)
		lines.Write(append(b, '\n'))
	}
	os.WriteFile(filepath.Join(out, tasks.ResultsFile), lines.Bytes(), 0o644)

	f, err := os.Create(TrajectoryPath(out, "hostile", 1))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	traj := agent.NewTrajectory(f)
	at := func(s int) time.Time { return start.Add(time.Duration(s) * time.Second) }
	usage := &agent.Usage{PromptTokens: 1000, CachedTokens: 500, CompletionTokens: 50}
	for _, e := range []agent.Event{
		{Time: at(0), Type: agent.EventTask, Text: hostilePrompt, Model: "gpt-4o-mini", Tools: []string{"run_command"}},
		{Time: at(0), Type: agent.EventMessage, Message: &agent.WireMessage{Role: "system", Content: "system prompt"}},
		{Time: at(0), Type: agent.EventMessage, Message: &agent.WireMessage{Role: "user", Content: "Your task:\n\n" + hostilePrompt}},
		{Time: at(1), Type: agent.EventRequest, Step: 1, ReservedUSD: 0.01},
		{Time: at(2), Type: agent.EventRetry, Attempt: 1, WaitMS: 1000, Error: "500 <i>Internal</i>"},
		{Time: at(4), Type: agent.EventResponse, Step: 1, Usage: usage, CostUSD: 0.004, LatencyMS: 3000, FinishReason: "tool_calls",
			Message: &agent.WireMessage{Role: "assistant", Content: "Let me look.", ToolCalls: []agent.WireToolCall{
				{ID: "c1", Name: "run_command", Arguments: hostileArgs}, {ID: "c2", Name: "run_command", Arguments: `{"command":"git push"}`}}}},
		{Time: at(5), Type: agent.EventToolResult, Step: 1, Tool: "run_command", Arguments: hostileArgs, DurationMS: 800,
			Message: &agent.WireMessage{Role: "tool", ToolCallID: "c1", Content: hostileOutput}},
		{Time: at(5), Type: agent.EventToolResult, Step: 1, Tool: "run_command", Arguments: `{"command":"git push"}`, IsError: true,
			Blocked: "the command matches the deny rule <push>", Message: &agent.WireMessage{Role: "tool", ToolCallID: "c2", Content: "Blocked by the task's policy"}},
		{Time: at(6), Type: agent.EventCompaction, Step: 1, Stage: "elide", Replaced: 2, TokensBefore: 9000, TokensAfter: 3000},
		{Time: at(7), Type: agent.EventRequest, Step: 2},
		{Time: at(8), Type: agent.EventResponse, Step: 2, Usage: usage, CostUSD: 0.004, Message: &agent.WireMessage{Role: "assistant",
			ToolCalls: []agent.WireToolCall{{ID: "c3", Name: "complete", Arguments: `{"summary":` + jsonString(hostileSummary) + `}`}}}},
		{Time: at(8), Type: agent.EventToolResult, Step: 2, Tool: "complete", Message: &agent.WireMessage{Role: "tool", ToolCallID: "c3", Content: "Task marked complete."}},
		{Time: at(8), Type: agent.EventStatus, Step: 2, Status: agent.StatusCompleted, Summary: hostileSummary},
		{Time: at(9), Type: agent.EventCheck, Text: "test -f </script>", Status: "exit 1", Summary: hostileOutput, IsError: true},
	} {
		traj.Record(e)
	}
	return out, commit
}

func jsonString(s string) string {
	b, _ := json.Marshal(s)
	return string(b)
}
