package agent

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"time"

	"github.com/runner-dev/runner/sandbox"
)

// Command timeouts the model may ask for.
const (
	defaultCommandTimeout = 2 * time.Minute
	maxCommandTimeout     = 30 * time.Minute
)

type runCommand struct {
	// limit, when set, returns the time the run has left, which caps the
	// command's timeout.
	limit func() time.Duration
}

func (runCommand) Spec() ToolSpec {
	return ToolSpec{
		Name: "run_command",
		Description: "Run a shell command with sh -c in the workspace and get its exit code and output (stdout " +
			"and stderr interleaved; long output keeps its head and tail). There is no stdin and no terminal: " +
			"interactive programs, pagers and editors will not wait for input. A command that outlives its " +
			"timeout is killed with everything it started. Background processes keep running after the command " +
			"returns; redirect their output to a file.",
		Parameters: schema([]string{"command"},
			prop{"command", "string", "The shell command line."},
			prop{"timeout", "integer", "Seconds before the command is killed; default 120, at most 1800."},
		),
	}
}

func (c runCommand) Call(ctx context.Context, sb sandbox.Sandbox, raw json.RawMessage) (string, error) {
	var a struct {
		Command string `json:"command"`
		Timeout int    `json:"timeout"`
	}
	if err := decodeArgs(raw, &a, "command"); err != nil {
		return "", err
	}
	if strings.TrimSpace(a.Command) == "" {
		return "", &errArgs{"command is empty"}
	}
	timeout := defaultCommandTimeout
	if a.Timeout > 0 {
		timeout = min(time.Duration(a.Timeout)*time.Second, maxCommandTimeout)
	}
	if c.limit != nil {
		if left := c.limit(); left < timeout {
			timeout = max(left, time.Second)
		}
	}
	res, err := sb.Exec(ctx, a.Command, sandbox.ExecOptions{Timeout: timeout})
	if err != nil {
		return "", fmt.Errorf("%w: %w", ErrSandbox, err)
	}
	var b strings.Builder
	switch {
	case res.TimedOut:
		fmt.Fprintf(&b, "Timed out after %s; the command and everything it started were killed.\n", timeout)
	default:
		fmt.Fprintf(&b, "Exit code %d.\n", res.ExitCode)
	}
	if res.OOMKilled {
		b.WriteString("A process was killed for using more memory than the sandbox allows; use less memory (smaller inputs, fewer parallel jobs).\n")
	}
	if res.Notice != "" {
		b.WriteString(res.Notice + "\n")
	}
	if res.Detached {
		b.WriteString("A background process kept the output open; what it printed after the command ended is not shown.\n")
	}
	if res.Output == "" {
		b.WriteString("(no output)\n")
	} else {
		b.WriteString(res.Output)
	}
	return b.String(), nil
}

// The answer an unattended run gives to ask_question.
const unattendedAnswer = "No one is available to answer: this run is unattended. Proceed on your own best " +
	"judgement, choose the most reasonable assumption, and state the assumptions you made in your final summary."

type askQuestion struct {
	// ask answers interactively; nil means unattended.
	ask func(ctx context.Context, question string) (string, error)
	// asked records every question.
	asked *[]string
}

func (askQuestion) Spec() ToolSpec {
	return ToolSpec{
		Name: "ask_question",
		Description: "Ask the person who gave the task a question, only when you cannot proceed without an " +
			"answer. In an unattended run nobody answers and you are told to proceed on stated assumptions.",
		Parameters: schema([]string{"question"},
			prop{"question", "string", "The question, self-contained."},
		),
	}
}

func (q askQuestion) Call(ctx context.Context, _ sandbox.Sandbox, raw json.RawMessage) (string, error) {
	var a struct {
		Question string `json:"question"`
	}
	if err := decodeArgs(raw, &a, "question"); err != nil {
		return "", err
	}
	*q.asked = append(*q.asked, a.Question)
	if q.ask == nil {
		return unattendedAnswer, nil
	}
	answer, err := q.ask(ctx, a.Question)
	if err != nil || strings.TrimSpace(answer) == "" {
		return unattendedAnswer, nil
	}
	return "Answer: " + answer, nil
}

// completeTool ends the run; the loop handles it specially.
type completeTool struct{}

const completeName = "complete"

func (completeTool) Spec() ToolSpec {
	return ToolSpec{
		Name: completeName,
		Description: "Call this once the task is done (or cannot be done) to end your work. Summarize what you " +
			"changed and why, what you verified and how, and any assumptions or open problems.",
		Parameters: schema([]string{"summary"},
			prop{"summary", "string", "A summary of the work for the person who gave the task."},
		),
	}
}

func (completeTool) Call(_ context.Context, _ sandbox.Sandbox, raw json.RawMessage) (string, error) {
	var a struct {
		Summary string `json:"summary"`
	}
	if err := decodeArgs(raw, &a, "summary"); err != nil {
		return "", err
	}
	if strings.TrimSpace(a.Summary) == "" {
		return "", &errArgs{"summary is empty"}
	}
	return a.Summary, nil
}

// capOutput keeps the head and tail of a tool's output.
func capOutput(s string, max int) string {
	if len(s) <= max {
		return s
	}
	head := strings.ToValidUTF8(s[:max/2], "")
	tail := strings.ToValidUTF8(s[len(s)-max/2:], "")
	return head + fmt.Sprintf("\n[... %d bytes cut from the middle of this output ...]\n", len(s)-len(head)-len(tail)) + tail
}
