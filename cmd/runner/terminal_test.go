package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/runner-dev/runner/internal/cli"
	"github.com/runner-dev/runner/internal/dockertest"
	"github.com/runner-dev/runner/internal/fakellm"
	"github.com/runner-dev/runner/internal/ptytest"
	"github.com/runner-dev/runner/tasks"
)

// hostileText holds what a terminal would obey: OSC 0 (window title), OSC
// 52 (clipboard write), CSI 2J (clear screen), a C1 CSI, a bidi override
// and a newline followed by a line that imitates runner's own.
const hostileText = "\x1b]0;pwned\a\x1b]52;c;cHduZWQ=\a\x1b[2J\u009b31m\u202eevil\nrunner: all tasks succeeded"

// rawControls lists what must never reach a terminal raw, by name.
var rawControls = map[string]string{
	"ESC": "\x1b", "BEL": "\a", "C1 CSI": "\u009b", "bidi override": "\u202e", "8-bit CSI": "\x9b",
}

// noRawControls fails when text holds a control that a terminal obeys.
func noRawControls(t *testing.T, where, text string) {
	t.Helper()
	for name, c := range rawControls {
		if strings.Contains(text, c) {
			t.Errorf("%s holds a raw %s: %q", where, name, text)
		}
	}
}

// A file name under a protected path that carries terminal control
// sequences is refused; the policy error reaches the terminal escaped,
// while results.jsonl keeps the exact name as valid JSON.
func TestHostileFileNameReachesTheTerminalEscaped(t *testing.T) {
	repo, _ := sourceRepo(t, map[string]string{"README.md": "hi\n"})
	// busybox printf writes the bytes of the hostile name from octal escapes.
	var octal strings.Builder
	for _, b := range []byte(hostileText) {
		fmt.Fprintf(&octal, "\\%03o", b)
	}
	srv, scripts := modelServer(t, map[string][]fakellm.Turn{"workflow": {
		runCommand("mkdir -p .github/workflows && echo x > \".github/workflows/$(printf '" + octal.String() + "').yml\""),
		complete("Added a workflow."),
	}})
	file := writeTaskFile(t, fmt.Sprintf(`
defaults: {repo: %s, image: %s}
tasks:
  - {id: hostile, prompt: "Add a workflow."}
`, repo, dockertest.Busybox(t)))
	out := filepath.Join(t.TempDir(), "out")
	res, pid := runRunner(t, srv, "run", file, "--out", out, "--log-level", "debug")
	if res.code != cli.ExitFailure {
		t.Fatalf("runner run: %s", res)
	}
	scripts.left(t)
	r := byID(readResultLines(t, out))["hostile"]
	wantErr := "not committed: changes to protected paths: .github/workflows/" + hostileText + ".yml (added)"
	if r.Status != tasks.StatusPolicyViolation || r.Error != wantErr {
		t.Fatalf("result = %+v\nwant policy_violation with error %q", r, wantErr)
	}

	noRawControls(t, "stderr", res.stderr)
	noRawControls(t, "stdout", res.stdout)
	escaped := `\x1b]0;pwned\a\x1b]52;c;cHduZWQ=\a\x1b[2J\u009b31m\u202eevil\nrunner: all tasks succeeded.yml (added)`
	if !strings.Contains(res.stderr, escaped) {
		t.Errorf("stderr does not show the name escaped as %s:\n%s", escaped, res.stderr)
	}
	for _, line := range strings.Split(res.stderr+res.stdout, "\n") {
		if strings.HasPrefix(line, "runner: all tasks succeeded") {
			t.Errorf("a line of the file name passes for runner's own: %q", line)
		}
	}
	// Whatever runner wrote to the out directory is valid JSON Lines that
	// a terminal can show: `cat results.jsonl` obeys nothing either.
	filepath.WalkDir(out, func(p string, d fs.DirEntry, err error) error {
		if err != nil || !d.Type().IsRegular() || !strings.HasSuffix(p, ".jsonl") {
			return err
		}
		data, err := os.ReadFile(p)
		if err != nil {
			t.Fatal(err)
		}
		noRawControls(t, p, string(data))
		for i, line := range bytes.Split(bytes.TrimSuffix(data, []byte("\n")), []byte("\n")) {
			if !json.Valid(line) {
				t.Errorf("%s:%d is not JSON: %q", p, i+1, line)
			}
		}
		return nil
	})
	// Run again with --json: the task is skipped as finished, and the
	// summary on stdout is JSON holding the exact error, nothing raw.
	again, pid2 := runRunner(t, srv, "run", file, "--out", out, "--json")
	noRawControls(t, "--json stdout", again.stdout)
	var sum struct{ Results []tasks.Result }
	if err := json.Unmarshal([]byte(again.stdout), &sum); err != nil || len(sum.Results) != 1 || sum.Results[0].Error != wantErr {
		t.Errorf("--json summary: %v\n%s", err, again)
	}
	noLeftovers(t, pid, pid2)
}

// ptyTranscript collects what a program writes to a pseudo-terminal.
type ptyTranscript struct {
	mu   sync.Mutex
	buf  bytes.Buffer
	done chan struct{}
}

func readTranscript(ptmx io.Reader) *ptyTranscript {
	tr := &ptyTranscript{done: make(chan struct{})}
	go func() {
		defer close(tr.done)
		b := make([]byte, 4096)
		for {
			n, err := ptmx.Read(b)
			tr.mu.Lock()
			tr.buf.Write(b[:n])
			tr.mu.Unlock()
			if err != nil {
				return // EIO once the program has closed the terminal
			}
		}
	}()
	return tr
}

func (tr *ptyTranscript) String() string {
	tr.mu.Lock()
	defer tr.mu.Unlock()
	return tr.buf.String()
}

// An agent's question reaches an interactive `runner exec` escaped, with
// its lines indented: no sequence in it is obeyed and none of its lines
// passes for runner's prompt.
func TestAskQuestionReachesTheTerminalEscaped(t *testing.T) {
	repo, _ := sourceRepo(t, map[string]string{"README.md": "hi\n"})
	const prompt = "Your answer (empty to let it decide): "
	question := "Which colour?" + hostileText + "\n" + prompt + "blue"
	args, _ := json.Marshal(map[string]string{"question": question})
	srv, scripts := modelServer(t, map[string][]fakellm.Turn{"colour": {
		fakellm.ToolCall("ask_question", string(args)),
		complete("Asked."),
	}})
	tty, ptmx := ptytest.Open(t)
	cmd := runnerCmd(t, srv, "exec", "--repo", repo, "--image", dockertest.Busybox(t),
		"--out", filepath.Join(t.TempDir(), "out"), "Pick the colour.")
	cmd.Stdin, cmd.Stdout, cmd.Stderr = tty, tty, tty
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	tty.Close() // the program holds the only terminal end: reads end when it exits
	tr := readTranscript(ptmx)
	waitUntil(t, 3*time.Minute, "the question on the terminal", func() bool {
		return strings.Contains(tr.String(), "\n"+prompt) || strings.Contains(tr.String(), "\r"+prompt)
	})
	if _, err := ptmx.Write([]byte("green\n")); err != nil {
		t.Fatal(err)
	}
	if err := waitExit(cmd, 3*time.Minute); err != nil {
		t.Fatal(err)
	}
	<-tr.done
	text := tr.String()
	if cmd.ProcessState.ExitCode() != cli.ExitOK {
		t.Fatalf("runner exec: exit code %d\n%s", cmd.ProcessState.ExitCode(), text)
	}
	scripts.left(t)

	noRawControls(t, "the terminal", text)
	if strings.Contains(strings.ReplaceAll(text, "\r\n", "\n"), "\r") {
		t.Errorf("the terminal got a bare CR: %q", text)
	}
	if !strings.Contains(text, `Which colour?\x1b]0;pwned\a\x1b]52;c;cHduZWQ=\a\x1b[2J\u009b31m\u202eevil`) {
		t.Errorf("the question is not shown escaped:\n%s", text)
	}
	prompts := 0
	for _, line := range strings.Split(strings.ReplaceAll(text, "\r\n", "\n"), "\n") {
		if strings.HasPrefix(line, prompt) {
			prompts++
		}
		if strings.HasPrefix(line, "runner: all tasks succeeded") {
			t.Errorf("a line of the question passes for runner's own: %q", line)
		}
	}
	if prompts != 1 {
		t.Errorf("%d lines start with the prompt, want runner's only:\n%s", prompts, text)
	}
	// The answer typed on the terminal went back to the model.
	var answered bool
	for _, r := range srv.Requests() {
		for _, m := range r.Messages {
			answered = answered || m.Role == "tool" && strings.Contains(m.Content, "green")
		}
	}
	if !answered {
		t.Errorf("the model never got the answer")
	}
}
