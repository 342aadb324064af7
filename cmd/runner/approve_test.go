package main

import (
	"bytes"
	"encoding/json"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/runner-dev/runner/internal/cli"
	"github.com/runner-dev/runner/internal/dockertest"
	"github.com/runner-dev/runner/internal/fakellm"
	"github.com/runner-dev/runner/internal/ptytest"
	"github.com/runner-dev/runner/tasks"
)

const approvePrompt = "Allow? [y]es, [n]o, [a]lways for "

// startApproving starts `runner exec --approve` on a pseudo-terminal.
func startApproving(t *testing.T, srv *fakellm.Server, repo, out string) (*ptyTranscript, func([]byte), func() int, int) {
	t.Helper()
	tty, ptmx := ptytest.Open(t)
	cmd := runnerCmd(t, srv, "exec", "--approve", "--repo", repo, "--image", dockertest.Busybox(t),
		"--out", out, "--id", "attended", "Fix the heading.")
	cmd.Stdin, cmd.Stdout, cmd.Stderr = tty, tty, tty
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cmd.Process.Kill() })
	tty.Close()
	tr := readTranscript(ptmx)
	typeLine := func(b []byte) {
		if _, err := ptmx.Write(b); err != nil {
			t.Fatal(err)
		}
	}
	wait := func() int {
		if err := waitExit(cmd, 3*time.Minute); err != nil {
			t.Fatal(err)
		}
		<-tr.done
		return cmd.ProcessState.ExitCode()
	}
	return tr, typeLine, wait, cmd.Process.Pid
}

// waitPrompts waits until the terminal shows n approval questions.
func waitPrompts(t *testing.T, tr *ptyTranscript, n int) {
	t.Helper()
	defer func() {
		if t.Failed() {
			t.Logf("the terminal shows:\n%s", tr.String())
		}
	}()
	waitUntil(t, 3*time.Minute, "approval question", func() bool {
		return strings.Count(tr.String(), approvePrompt) >= n
	})
}

// An attended run shows each command and file change first: a refused
// command does not run and the model reads the reason, an approved edit is
// shown as a diff and lands on the branch; what the model wrote is shown
// escaped.
func TestApproveOnATerminal(t *testing.T) {
	repo, _ := sourceRepo(t, map[string]string{"README.md": "# Helo\n"})
	srv, scripts := modelServer(t, map[string][]fakellm.Turn{"heading": {
		fakellm.ToolCall("run_command", string(must(json.Marshal(map[string]string{"command": "touch PWNED" + hostileText})))),
		fakellm.ToolCall("edit_file", `{"path":"README.md","old_string":"Helo","new_string":"Hello"}`),
		complete("Fixed the heading."),
	}})
	out := filepath.Join(t.TempDir(), "out")
	tr, typeLine, wait, pid := startApproving(t, srv, repo, out)
	waitPrompts(t, tr, 1)
	typeLine([]byte("n\n"))
	waitUntil(t, time.Minute, "the reason question", func() bool { return strings.Contains(tr.String(), "Why not") })
	typeLine([]byte("no files named PWNED\n"))
	waitPrompts(t, tr, 2)
	typeLine([]byte("y\n"))
	if code := wait(); code != cli.ExitOK {
		t.Fatalf("exit %d\n%s", code, tr.String())
	}
	scripts.left(t)
	text := tr.String()
	noRawControls(t, "the terminal", text)
	for _, want := range []string{"The agent wants to run:", `touch PWNED\x1b]0;pwned\a`,
		"The agent wants to change README.md (edit_file):", "-# Helo", "+# Hello"} {
		if !strings.Contains(text, want) {
			t.Errorf("the terminal does not show %q:\n%s", want, text)
		}
	}
	for _, line := range strings.Split(strings.ReplaceAll(text, "\r\n", "\n"), "\n") {
		if strings.HasPrefix(line, "runner: all tasks succeeded") {
			t.Errorf("a line of the command passes for runner's own: %q", line)
		}
	}
	var told bool
	for _, r := range srv.Requests() {
		for _, m := range r.Messages {
			told = told || m.Role == "tool" && strings.Contains(m.Content, "no files named PWNED")
		}
	}
	if !told {
		t.Error("the model never read the reason")
	}
	r := byID(readResultLines(t, out))["attended"]
	if r.Status != tasks.StatusSucceeded {
		t.Fatalf("result %+v", r)
	}
	if got := gitCLI(t, repo, "show", r.Branch+":README.md"); strings.TrimSpace(got) != "# Hello" {
		t.Errorf("the branch's README.md = %q", got)
	}
	if files := gitCLI(t, repo, "ls-tree", "-r", "--name-only", r.Branch); strings.Contains(files, "PWNED") {
		t.Errorf("the refused command ran: the branch holds %q", files)
	}
	noLeftovers(t, pid)
}

// Ctrl-C at the question ends the task cleanly: interrupted, nothing left.
func TestApproveInterruptedAtTheQuestion(t *testing.T) {
	repo, _ := sourceRepo(t, map[string]string{"README.md": "hi\n"})
	srv, _ := modelServer(t, map[string][]fakellm.Turn{"heading": {runCommand("touch x")}})
	out := filepath.Join(t.TempDir(), "out")
	tr, _, wait, pid := startApproving(t, srv, repo, out)
	waitPrompts(t, tr, 1)
	// What the terminal does on Ctrl-C: SIGINT to the foreground program.
	if err := syscall.Kill(pid, syscall.SIGINT); err != nil {
		t.Fatal(err)
	}
	if code := wait(); code != cli.ExitInterrupted {
		t.Fatalf("exit %d, want %d\n%s", code, cli.ExitInterrupted, tr.String())
	}
	if r := byID(readResultLines(t, out))["attended"]; r.Status != tasks.StatusInterrupted {
		t.Errorf("result %+v, want interrupted", r)
	}
	noLeftovers(t, pid)
}

// --approve needs a terminal to ask on.
func TestApproveNeedsATerminal(t *testing.T) {
	repo, _ := sourceRepo(t, map[string]string{"README.md": "hi\n"})
	srv, _ := modelServer(t, nil)
	cmd := runnerCmd(t, srv, "exec", "--approve", "--repo", repo, "--out", filepath.Join(t.TempDir(), "out"), "Do it.")
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	err := cmd.Run()
	if code := cmd.ProcessState.ExitCode(); code != cli.ExitUsage || !strings.Contains(stderr.String(), "--approve asks on a terminal") {
		t.Fatalf("exit %d (%v), stderr:\n%s", code, err, stderr.String())
	}
	if len(srv.Requests()) != 0 {
		t.Errorf("the model was called")
	}
}

func must[T any](v T, err error) T {
	if err != nil {
		panic(err)
	}
	return v
}
