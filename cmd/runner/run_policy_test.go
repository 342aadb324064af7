package main

import (
	"bufio"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/runner-dev/runner/agent"
	"github.com/runner-dev/runner/internal/cli"
	"github.com/runner-dev/runner/internal/dockertest"
	"github.com/runner-dev/runner/internal/fakellm"
	"github.com/runner-dev/runner/tasks"
)

func runCommand(command string) fakellm.Turn {
	return fakellm.ToolCall("run_command", fmt.Sprintf(`{"command":%q}`, command))
}

// blockedCalls reads the refused calls from a trajectory file.
func blockedCalls(t *testing.T, path string) []agent.Event {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var out []agent.Event
	sc := bufio.NewScanner(f)
	sc.Buffer(nil, 1<<20)
	for sc.Scan() {
		var e agent.Event
		if err := json.Unmarshal(sc.Bytes(), &e); err != nil {
			t.Fatalf("%s: %v", path, err)
		}
		if e.Type == agent.EventToolResult && e.Blocked != "" {
			out = append(out, e)
		}
	}
	return out
}

// A workflow written through run_command (which the file tools would have
// refused) gets the task no branch and the status policy_violation; the
// same work with protection turned off is committed.
func TestRunRefusesProtectedChanges(t *testing.T) {
	repo, head := sourceRepo(t, map[string]string{"README.md": "# Helo\n"})
	sneak := []fakellm.Turn{
		edit("README.md", "Helo", "Hello"),
		runCommand("mkdir -p .github/workflows && echo x > .github/workflows/ci.yml"),
		complete("Fixed the heading, and added CI."),
	}
	srv, scripts := modelServer(t, map[string][]fakellm.Turn{"strictly": sneak, "loosely": sneak})
	file := writeTaskFile(t, fmt.Sprintf(`
defaults: {repo: %s, image: %s}
tasks:
  - {id: guarded, prompt: "Fix the heading, strictly."}
  - {id: unguarded, prompt: "Fix the heading, loosely.", protected_paths: []}
`, repo, dockertest.Busybox(t)))
	out := filepath.Join(t.TempDir(), "out")
	res, pid := runRunner(t, srv, "run", file, "--out", out)
	if res.code != cli.ExitFailure {
		t.Fatalf("runner run: %s", res)
	}
	scripts.left(t)
	results := byID(readResultLines(t, out))
	g := results["guarded"]
	if g.Status != tasks.StatusPolicyViolation || g.Commit != "" ||
		g.Error != "not committed: changes to protected paths: .github/workflows/ci.yml (added)" {
		t.Errorf("guarded result = %+v; want policy_violation naming the workflow, no commit", g)
	}
	if g.Summary != "Fixed the heading, and added CI." {
		t.Errorf("guarded summary = %q; the agent's account was lost", g.Summary)
	}
	if !strings.Contains(res.stderr, "x guarded: policy_violation") {
		t.Errorf("progress does not show the violation:\n%s", res.stderr)
	}
	u := results["unguarded"]
	if u.Status != tasks.StatusSucceeded || u.Commit == "" {
		t.Fatalf("unguarded result = %+v; want it committed", u)
	}
	if got := gitCLI(t, repo, "diff", "--name-only", head, "agent/unguarded"); got != ".github/workflows/ci.yml\nREADME.md" {
		t.Errorf("agent/unguarded changes %q", got)
	}
	if got := branchList(t, repo); strings.Join(got, " ") != "agent/unguarded main" {
		t.Errorf("branches = %v; the guarded task must leave none", got)
	}
	userRepoUnchanged(t, repo, head)
	noLeftovers(t, pid)
}

// A workflow slipped in through a symlinked .github/workflows (the base
// has none), or under another spelling of the name, gets the task no
// branch and the status policy_violation naming the symlink; the result
// names no branch, and the git CLI finds none.
func TestRunRefusesSymlinkedWorkflows(t *testing.T) {
	repo, head := sourceRepo(t, map[string]string{"README.md": "# Helo\n"})
	srv, scripts := modelServer(t, map[string][]fakellm.Turn{
		"linked": {
			edit("README.md", "Helo", "Hello"),
			runCommand("mkdir -p ci .github && printf 'on: push\\n' > ci/x.yml && ln -s ../ci .github/workflows"),
			complete("Fixed the heading."),
		},
		"spelled": {
			runCommand("mkdir -p .GitHub/Workflows && echo 'on: push' > .GitHub/Workflows/x.yml"),
			complete("Added CI."),
		},
	})
	file := writeTaskFile(t, fmt.Sprintf(`
defaults: {repo: %s, image: %s}
tasks:
  - {id: linked, prompt: "Fix the heading, linked."}
  - {id: spelled, prompt: "Add CI, spelled."}
`, repo, dockertest.Busybox(t)))
	out := filepath.Join(t.TempDir(), "out")
	res, pid := runRunner(t, srv, "run", file, "--out", out)
	if res.code != cli.ExitFailure {
		t.Fatalf("runner run: %s", res)
	}
	scripts.left(t)
	results := byID(readResultLines(t, out))
	for id, want := range map[string]string{
		"linked": "not committed: changes to protected paths: " +
			".github/workflows (added, a symlink where .github/workflows/** could match below), " +
			"ci/x.yml (added, a checkout also shows it at .github/workflows/x.yml, through a symlink)",
		"spelled": "not committed: changes to protected paths: " +
			".GitHub/Workflows/x.yml (added, taken for .github/workflows/** by case-insensitive or Windows file systems)",
	} {
		r := results[id]
		if r.Status != tasks.StatusPolicyViolation || r.Error != want {
			t.Errorf("%s: status %s, error %q; want policy_violation, %q", id, r.Status, r.Error, want)
		}
		if r.Branch != "" || r.Commit != "" {
			t.Errorf("%s: the result names branch %q, commit %q", id, r.Branch, r.Commit)
		}
	}
	if got := branchList(t, repo); strings.Join(got, " ") != "main" {
		t.Errorf("branches = %v; want main alone", got)
	}
	userRepoUnchanged(t, repo, head)
	noLeftovers(t, pid)
}

// Deny rules (from the task file and from --deny-command), --protect and
// a pre-tool hook next to the task file each refuse a call; the refused
// calls never run, the task goes on and succeeds, and the trajectory
// records every refusal.
func TestRunDenyRulesAndHook(t *testing.T) {
	repo, head := sourceRepo(t, map[string]string{"README.md": "hi\n", "src/app.txt": "v1\n"})
	dir := t.TempDir()
	seen := filepath.Join(dir, "seen.jsonl")
	writeFile(t, filepath.Join(dir, "hook.sh"), `#!/bin/sh
input=$(cat)
printf '%s\n' "$input" >> `+seen+`
case "$input" in
  *wget*) echo "downloads are not allowed in $RUNNER_TASK_ID" >&2; exit 2 ;;
esac
`)
	os.Chmod(filepath.Join(dir, "hook.sh"), 0o755)
	srv, scripts := modelServer(t, map[string][]fakellm.Turn{"careful": {
		runCommand("echo pushed > pushed.txt; git push origin main"),
		runCommand("echo removed > removed.txt; rm -rf src"),
		runCommand("wget -O fetched.txt http://example.com/"),
		fakellm.ToolCall("write_file", `{"path":"src/app.txt","content":"v2\n"}`),
		runCommand("echo fine > fine.txt"),
		complete("Wrote fine.txt."),
	}})
	file := filepath.Join(dir, "tasks.yaml")
	writeFile(t, file, fmt.Sprintf(`
tasks:
  - id: careful
    repo: %s
    image: %s
    prompt: Be careful.
    deny_commands: ['\bgit\s+push\b']
    pre_tool_hook: hook.sh
`, repo, dockertest.Busybox(t)))
	out := filepath.Join(t.TempDir(), "out")
	res, pid := runRunner(t, srv, "run", file, "--out", out, "--deny-command", `\brm\s+-rf\b`, "--protect", "src/")
	if res.code != cli.ExitOK {
		t.Fatalf("runner run: %s", res)
	}
	scripts.left(t)
	r := readResultLines(t, out)[0]
	if r.Status != tasks.StatusSucceeded || r.Commit == "" {
		t.Fatalf("result = %+v", r)
	}
	// Only the allowed command ran: the others would have left files.
	if got := gitCLI(t, repo, "diff", "--name-only", head, "agent/careful"); got != "fine.txt" {
		t.Errorf("agent/careful changes %q, want only fine.txt", got)
	}
	blocked := blockedCalls(t, filepath.Join(out, "trajectories", "careful.1.jsonl"))
	wants := []string{
		"the command matches the deny rule `\\bgit\\s+push\\b`",
		"the command matches the deny rule `\\brm\\s+-rf\\b`",
		"the pre-tool hook denied it: downloads are not allowed in careful",
		"src/app.txt is a protected path (src/) that may not be changed",
	}
	if len(blocked) != len(wants) {
		t.Fatalf("%d blocked calls recorded, want %d: %+v", len(blocked), len(wants), blocked)
	}
	for i, want := range wants {
		if blocked[i].Blocked != want || !blocked[i].IsError {
			t.Errorf("blocked call %d: %q, want %q", i+1, blocked[i].Blocked, want)
		}
	}
	// The hook was asked only about the calls the rules let through, and
	// never about complete.
	calls, _ := os.ReadFile(seen)
	var tools []string
	for line := range strings.SplitSeq(strings.TrimSpace(string(calls)), "\n") {
		var c struct{ Tool, Workspace string }
		if err := json.Unmarshal([]byte(line), &c); err != nil || c.Workspace != "/workspace" {
			t.Fatalf("the hook read %q (%v)", line, err)
		}
		tools = append(tools, c.Tool)
	}
	if got := strings.Join(tools, " "); got != "run_command run_command" {
		t.Errorf("the hook was asked about %q, want the wget and echo commands only", got)
	}
	userRepoUnchanged(t, repo, head)
	noLeftovers(t, pid)
}

// Bad policy flags are usage errors, found before anything runs.
func TestRunPolicyFlagErrors(t *testing.T) {
	srv := fakellm.New(t)
	file := writeTaskFile(t, "tasks: [{id: a, repo: /nonexistent, prompt: p}]\n")
	res, _ := runRunner(t, srv, "run", file, "--out", filepath.Join(t.TempDir(), "out"),
		"--deny-command", "git (push", "--protect", "[abc", "--pre-tool-hook", "no-such-hook")
	if res.code != cli.ExitUsage {
		t.Fatalf("runner run: %s", res)
	}
	abs, _ := filepath.Abs("no-such-hook")
	for _, want := range []string{
		`bad glob pattern "[abc"`,
		`bad deny rule "git (push": missing closing )`,
		"pre-tool hook " + abs + ": no such file",
	} {
		if !strings.Contains(res.stderr, want) {
			t.Errorf("stderr lacks %q:\n%s", want, res.stderr)
		}
	}
	if n := len(srv.Requests()); n != 0 {
		t.Errorf("%d model calls were made", n)
	}
}
