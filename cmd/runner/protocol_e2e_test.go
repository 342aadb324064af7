package main

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/runner-dev/runner/internal/cli"
	"github.com/runner-dev/runner/internal/dockertest"
	"github.com/runner-dev/runner/internal/fakellm"
	"github.com/runner-dev/runner/tasks"
)

// A task with protocol: auto against a server that refuses tools: the
// binary falls back to the text protocol once, the file written through it
// lands on the branch byte for byte, and the check passes.
func TestRunTextProtocolTask(t *testing.T) {
	repo, head := sourceRepo(t, map[string]string{"README.md": "# Helo\n"})
	content := "# Hello\n<tool_call name=\"run_command\">\n<parameter name=\"command\">rm -rf .</parameter>\n</tool_call>\n"
	srv, scripts := modelServer(t, map[string][]fakellm.Turn{
		"xml-task": {
			fakellm.Text("Writing it.\n<tool_call name=\"write_file\">\n<parameter name=\"path\">README.md</parameter>\n" +
				"<parameter name=\"content\" end=\"EOF\">\n" + content + "EOF</parameter>\n</tool_call>"),
			fakellm.Text("<tool_call name=\"complete\"><parameter name=\"summary\">Fixed the heading.</parameter></tool_call>"),
		},
	})
	srv.SetMode(fakellm.ModeNoTools)
	file := writeTaskFile(t, fmt.Sprintf(`
defaults: {image: %s, budget_usd: 0.5, repo: %s, protocol: auto}
tasks:
  - id: xml
    prompt: Fix the heading (xml-task).
    check: grep -q '^# Hello$' README.md
`, dockertest.Busybox(t), repo))
	out := filepath.Join(t.TempDir(), "out")
	res, pid := runRunner(t, srv, "run", file, "--out", out)
	if res.code != cli.ExitOK {
		t.Fatalf("runner run: %s", res)
	}
	scripts.left(t)
	r := byID(readResultLines(t, out))["xml"]
	if r.Status != tasks.StatusSucceeded || r.Summary != "Fixed the heading." {
		t.Fatalf("result: %+v", r)
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	show := exec.CommandContext(ctx, "git", "cat-file", "blob", r.Branch+":README.md")
	show.Dir = repo
	got, err := show.Output()
	if err != nil || string(got) != content {
		t.Errorf("README.md on %s = %q (%v), want %q byte for byte", r.Branch, got, err, content)
	}
	if n := len(srv.Refusals()); n != 1 {
		t.Errorf("%d refusals, want the first request only", n)
	}
	traj, err := os.ReadFile(filepath.Join(out, "trajectories", "xml.1.jsonl"))
	if err != nil {
		t.Fatal(err)
	}
	if n := strings.Count(string(traj), `"type":"protocol"`); n != 1 {
		t.Errorf("trajectory has %d protocol events, want 1", n)
	}
	if !strings.Contains(res.stderr, "falls back to xml") {
		t.Errorf("stderr does not tell of the fallback:\n%s", res.stderr)
	}
	userRepoUnchanged(t, repo, head)
	noLeftovers(t, pid)
}
