package agent

import (
	"context"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/runner-dev/runner/internal/dockertest"
	"github.com/runner-dev/runner/internal/fakellm"
	"github.com/runner-dev/runner/sandbox"
	"github.com/runner-dev/runner/sandbox/docker"
)

func TestMain(m *testing.M) { os.Exit(dockertest.Main(m)) }

// Every tool, driven by the loop, on the real sandbox.
func TestToolsOnTheRealSandbox(t *testing.T) {
	dir := t.TempDir()
	os.WriteFile(dir+"/README.md", []byte("# Helo\n\nRun ./build.sh\n"), 0o644)
	os.WriteFile(dir+"/build.sh", []byte("#!/bin/sh\necho building\n"), 0o755)
	ctx, sb := realSandbox(t, dir)

	srv := fakellm.New(t,
		fakellm.ToolCall("list_files", `{"path":".","recursive":true}`),
		fakellm.ToolCall("read_file", `{"path":"README.md","start_line":1,"end_line":1}`),
		fakellm.ToolCall("edit_file", `{"path":"README.md","old_string":"Helo","new_string":"Hello"}`),
		fakellm.ToolCall("write_file", `{"path":"docs/new.txt","content":"new file\n"}`),
		fakellm.ToolCall("edit_file", `{"path":"build.sh","old_string":"building","new_string":"built"}`),
		fakellm.ToolCall("run_command", `{"command":"./build.sh && cat docs/new.txt && id -u","timeout":30}`),
		fakellm.ToolCall("run_command", `{"command":"sleep 30","timeout":1}`),
		fakellm.ToolCall("ask_question", `{"question":"Ship it?"}`),
		fakellm.ToolCall("complete", `{"summary":"Fixed the heading."}`),
	)
	a, _ := newTestAgent(t, srv, sb, Config{})
	out := a.Run(ctx)
	if out.Status != StatusCompleted || out.Summary != "Fixed the heading." || len(out.Questions) != 1 {
		t.Fatalf("outcome = %+v", out)
	}
	results := []string{}
	for _, r := range srv.Requests()[1:] {
		results = append(results, r.Messages[len(r.Messages)-1].Content)
	}
	wants := []string{
		"README.md\nbuild.sh\n",
		"     1\t# Helo\n[lines 1-1 of 3]",
		"Replaced 1 occurrence(s) in README.md.",
		"Wrote 9 bytes to docs/new.txt.",
		"Replaced 1 occurrence(s) in build.sh.",
		"Exit code 0.\nbuilt\nnew file\n1000\n",
		"Timed out after 1s",
		"unattended",
	}
	for i, want := range wants {
		if !strings.Contains(results[i], want) {
			t.Errorf("tool result %d = %q, want it to contain %q", i+1, results[i], want)
		}
	}
	check, err := sb.Exec(ctx, "cat README.md; stat -c %a build.sh", sandbox.ExecOptions{})
	if err != nil || check.Stdout != "# Hello\n\nRun ./build.sh\n755\n" {
		t.Errorf("workspace after the run: %q, %v (want the edit made and build.sh still executable)", check.Stdout, err)
	}
}

// realSandbox starts a sandbox of the busybox test image with dir as its
// workspace, closed at the end of the test, and returns it with a context
// that bounds the test.
func realSandbox(t *testing.T, dir string) (context.Context, *docker.Sandbox) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	t.Cleanup(cancel)
	sb, err := dockertest.Engine(t).StartContainer(ctx, sandbox.Config{Image: dockertest.Busybox(t), Workspace: dir, RunID: dockertest.RunID, TaskID: t.Name()})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { sb.Close(context.Background()) })
	return ctx, sb
}
