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
