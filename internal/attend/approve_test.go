package attend

import (
	"bytes"
	"context"
	"errors"
	"io"
	"strings"
	"testing"

	"github.com/runner-dev/runner/agent"
	"github.com/runner-dev/runner/internal/cli"
)

// console returns a console reading the typed lines and what it printed.
func console(typed string) (*Console, *bytes.Buffer) {
	var out bytes.Buffer
	p := cli.NewPrinter(&out, &out, cli.PrinterOptions{})
	return NewConsole(strings.NewReader(typed), p), &out
}

func run(cmd string) agent.ApprovalRequest {
	return agent.ApprovalRequest{Tool: "run_command", Command: cmd}
}

func TestAnswers(t *testing.T) {
	c, out := console("y\nn\nnot on main\nwhat\na\n")
	ctx := context.Background()
	if a, err := c.Approve(ctx, run("make")); err != nil || !a.Allow || a.Rule != "" {
		t.Fatalf("y: %+v %v", a, err)
	}
	if a, err := c.Approve(ctx, run("git push")); err != nil || a.Allow || a.Reason != "not on main" {
		t.Fatalf("n: %+v %v", a, err)
	}
	// An answer that is none of the choices is asked again.
	if a, err := c.Approve(ctx, run("ls")); err != nil || !a.Allow {
		t.Fatalf("a: %+v %v", a, err)
	}
	if !strings.Contains(out.String(), "Answer y, n or a or p.") {
		t.Errorf("an unknown answer was not asked again:\n%s", out)
	}
	// "always" for run_command allows every later command unasked.
	if a, err := c.Approve(ctx, run("rm -rf build; echo done")); err != nil || !a.Allow || a.Rule != "always run_command" {
		t.Fatalf("after a: %+v %v", a, err)
	}
	// ... but not another tool.
	if _, err := c.Approve(ctx, agent.ApprovalRequest{Tool: "write_file", Path: "x", New: "y"}); !errors.Is(err, ErrClosed) {
		t.Fatalf("write_file after always run_command: %v, want a question (and the input's end)", err)
	}
}

// A prefix allows simple commands that start with it, never one that
// chains another command after it.
func TestPrefixAllowsOnlySimpleCommands(t *testing.T) {
	c, _ := console("p\ngo test\n")
	ctx := context.Background()
	if a, err := c.Approve(ctx, run("go test ./...")); err != nil || !a.Allow {
		t.Fatalf("p: %+v %v", a, err)
	}
	for _, cmd := range []string{"go test ./parser", "go test"} {
		if a, err := c.Approve(ctx, run(cmd)); err != nil || !a.Allow || a.Rule != "commands starting with go test" {
			t.Errorf("%q: %+v %v", cmd, a, err)
		}
	}
	for _, cmd := range []string{
		"go test; curl evil", "go test && rm -rf /", "go test | sh", "go test $(curl x)", "go test `id`",
		"go test > /etc/x", "go test\nrm -rf /", "go testify", "go vet", "go test & curl x", "go test\\\n; id",
	} {
		if _, err := c.Approve(ctx, run(cmd)); !errors.Is(err, ErrClosed) {
			t.Errorf("%q was not asked about (err %v)", cmd, err)
		}
	}
}

// A prefix that is not how the command starts is refused and the question
// asked again.
func TestPrefixMustStartTheCommand(t *testing.T) {
	c, out := console("p\nmake\ny\n")
	if a, err := c.Approve(context.Background(), run("go build")); err != nil || !a.Allow {
		t.Fatalf("%+v %v", a, err)
	}
	if !strings.Contains(out.String(), `"make" is not how this command starts`) {
		t.Errorf("no word about the wrong prefix:\n%s", out)
	}
	if c.rules.allows(run("make")) != "" {
		t.Errorf("a prefix that was refused is allowed")
	}
}

// What the model wrote reaches the terminal escaped and indented: no
// control sequence is obeyed, no line passes for the prompt.
func TestShownEscaped(t *testing.T) {
	c, out := console("y\ny\n")
	hostile := "echo hi\x1b]52;c;cHduZWQ=\a\x1b[2J\nAllow? [y]es, [n]o: y"
	if _, err := c.Approve(context.Background(), run(hostile)); err != nil {
		t.Fatal(err)
	}
	if _, err := c.Approve(context.Background(), agent.ApprovalRequest{
		Tool: "edit_file", Path: "a\x1b[2J.go", Old: "x := 1\n", New: "x := 2\x1b]0;t\a\n",
	}); err != nil {
		t.Fatal(err)
	}
	text := out.String()
	if strings.ContainsAny(text, "\x1b\a") {
		t.Errorf("raw control characters reached the terminal: %q", text)
	}
	for _, line := range strings.Split(text, "\n") {
		if strings.HasPrefix(line, "Allow?") && !strings.HasPrefix(line, "Allow? [y]es, [n]o, [a]lways for ") {
			t.Errorf("a line of the model's passes for the prompt: %q", line)
		}
	}
	for _, want := range []string{`  | echo hi\x1b]52;c;cHduZWQ=\a\x1b[2J`, `  | Allow? [y]es`, `-x := 1`, `+x := 2\x1b]0;t\a`, "+1 -1"} {
		if !strings.Contains(text, want) {
			t.Errorf("missing %q in:\n%s", want, text)
		}
	}
}

// Ctrl-C at the question ends it at once with the context's error.
func TestCancelAtTheQuestion(t *testing.T) {
	pr, pw := io.Pipe()
	defer pw.Close()
	var out bytes.Buffer
	c := NewConsole(pr, cli.NewPrinter(&out, &out, cli.PrinterOptions{}))
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error)
	go func() {
		_, err := c.Approve(ctx, run("make"))
		done <- err
	}()
	cancel()
	if err := <-done; !errors.Is(err, context.Canceled) {
		t.Fatalf("err = %v, want context.Canceled", err)
	}
}
