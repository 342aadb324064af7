package agent

import (
	"os"
	"strings"
	"testing"

	"github.com/runner-dev/runner/internal/fakellm"
	"github.com/runner-dev/runner/internal/policy"
	"github.com/runner-dev/runner/sandbox"
)

// On the real sandbox, a command the hook denies does not run: the file it
// would create is absent, while the same command allowed creates its own.
func TestPolicyHookOnTheRealSandbox(t *testing.T) {
	dir := t.TempDir()
	os.WriteFile(dir+"/README.md", []byte("hello\n"), 0o644)
	ctx, sb := realSandbox(t, dir)

	hook := hookScript(t, `case "$(cat)" in
  *pwned*) echo "that file is off limits" >&2; exit 2 ;;
esac
`)
	srv := fakellm.New(t,
		fakellm.ToolCall("run_command", `{"command":"touch pwned && echo made"}`),
		fakellm.ToolCall("run_command", `{"command":"touch allowed && echo made"}`),
		fakellm.ToolCall("complete", `{"summary":"Done."}`),
	)
	a, traj := newTestAgent(t, srv, sb, Config{Policy: policy.Policy{Hook: hook}})
	if out := a.Run(ctx); out.Status != StatusCompleted {
		t.Fatalf("outcome = %+v", out)
	}
	res, err := sb.Exec(ctx, "ls", sandbox.ExecOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if got := strings.Fields(res.Stdout); strings.Join(got, " ") != "README.md allowed" {
		t.Errorf("workspace holds %q, want README.md and allowed only (the blocked touch did not run)", got)
	}
	results := toolResults(srv)
	if !strings.Contains(results[0], "Blocked by the task's policy: the pre-tool hook denied it: that file is off limits") ||
		!strings.Contains(results[1], "Exit code 0.\nmade") {
		t.Errorf("tool results = %q", results)
	}
	if n := len(blockedEvents(t, traj)); n != 1 {
		t.Errorf("the trajectory records %d blocked calls, want 1", n)
	}
}

// On the real sandbox, write_file and edit_file refuse a path that leads
// through a symlink to a protected path, whether the symlink came with the
// repository or the agent made it; a symlink to an unprotected directory
// is written through as before.
func TestPolicyRefusesWritesThroughSymlinks(t *testing.T) {
	dir := t.TempDir()
	const workflow = "on: push\n"
	os.MkdirAll(dir+"/.github/workflows", 0o755)
	os.MkdirAll(dir+"/src", 0o755)
	os.WriteFile(dir+"/.github/workflows/ci.yml", []byte(workflow), 0o644)
	os.Symlink(".github/workflows", dir+"/docs")
	os.Symlink("src", dir+"/lib")
	ctx, sb := realSandbox(t, dir)

	srv := fakellm.New(t,
		fakellm.ToolCall("write_file", `{"path":"docs/ci.yml","content":"on: pull_request_target\n"}`),
		fakellm.ToolCall("edit_file", `{"path":"/workspace/docs/ci.yml","old_string":"push","new_string":"pull_request_target"}`),
		fakellm.ToolCall("write_file", `{"path":"docs/new/deep.yml","content":"x"}`),
		fakellm.ToolCall("run_command", `{"command":"ln -s .github wf"}`),
		fakellm.ToolCall("write_file", `{"path":"wf/workflows/made.yml","content":"x"}`),
		fakellm.ToolCall("write_file", `{"path":"lib/app.txt","content":"v1\n"}`),
		fakellm.ToolCall("complete", `{"summary":"Done."}`),
	)
	a, traj := newTestAgent(t, srv, sb, Config{Policy: policy.Policy{Protected: policy.DefaultProtected}})
	if out := a.Run(ctx); out.Status != StatusCompleted {
		t.Fatalf("outcome = %+v", out)
	}
	results := toolResults(srv)
	for i, want := range []string{
		"Blocked by the task's policy: docs/ci.yml leads through a symlink to .github/workflows/ci.yml, a protected path (.github/workflows/**)",
		"Blocked by the task's policy: /workspace/docs/ci.yml leads through a symlink to .github/workflows/ci.yml, a protected path (.github/workflows/**)",
		"Blocked by the task's policy: docs/new/deep.yml leads through a symlink to .github/workflows/new/deep.yml",
		"Exit code 0",
		"Blocked by the task's policy: wf/workflows/made.yml leads through a symlink to .github/workflows/made.yml",
	} {
		if !strings.Contains(results[i], want) {
			t.Errorf("tool result %d = %q, want it to hold %q", i, results[i], want)
		}
	}
	if got, err := sb.ReadFile(ctx, ".github/workflows/ci.yml"); err != nil || string(got) != workflow {
		t.Errorf("the workflow is %q (%v), want it unchanged", got, err)
	}
	res, err := sb.Exec(ctx, "ls -A .github/workflows; cat src/app.txt", sandbox.ExecOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if res.Stdout != "ci.yml\nv1\n" {
		t.Errorf("workspace: %q, want the workflows untouched and src/app.txt written through lib", res.Stdout)
	}
	if n := len(blockedEvents(t, traj)); n != 4 {
		t.Errorf("the trajectory records %d blocked calls, want 4", n)
	}
}
