package agent

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/runner-dev/runner/budget"
	"github.com/runner-dev/runner/internal/fakellm"
	"github.com/runner-dev/runner/sandbox"
)

const testKey = "sk-test-canary-0123456789abcdef"

func testPrice(t testing.TB) budget.Price {
	t.Helper()
	p, err := budget.DefaultPrices().Lookup("gpt-4o-mini")
	if err != nil {
		t.Fatal(err)
	}
	return p
}

// newTestAgent wires an agent to a scripted server through the real
// OpenAI client, recording its trajectory.
func newTestAgent(t testing.TB, srv *fakellm.Server, sb sandbox.Sandbox, cfg Config) (*Agent, *bytes.Buffer) {
	t.Helper()
	m, err := NewOpenAI(OpenAIConfig{BaseURL: srv.URL(), APIKey: testKey, MaxRetries: 2,
		Sleep: func(context.Context, time.Duration) error { return nil }})
	if err != nil {
		t.Fatal(err)
	}
	var traj bytes.Buffer
	cfg.Model = "gpt-4o-mini"
	if cfg.Price.Model == "" {
		cfg.Price = testPrice(t)
	}
	cfg.Trajectory = NewTrajectory(&traj, testKey)
	return New(m, sb, Task{ID: "t1", Prompt: "Fix the typo in README.md."}, cfg), &traj
}

func TestLoopRunsToolsAndCompletes(t *testing.T) {
	sb := newMemSandbox(map[string]string{"README.md": "# Helo\n", "src/main.go": "package main\n"})
	srv := fakellm.New(t,
		fakellm.ToolCall("list_files", `{"path":".","recursive":true}`).WithUsage(1000, 20, 0),
		fakellm.ToolCall("read_file", `{"path":"README.md"}`).WithUsage(1100, 20, 900),
		fakellm.ToolCalls(
			fakellm.Call{Name: "edit_file", Arguments: `{"path":"README.md","old_string":"Helo","new_string":"Hello"}`},
			fakellm.Call{Name: "run_command", Arguments: `{"command":"make test"}`},
		).WithUsage(1200, 40, 1000),
		fakellm.ToolCall("complete", `{"summary":"Fixed the typo."}`).WithUsage(1300, 15, 1100),
	)
	a, traj := newTestAgent(t, srv, sb, Config{})
	out := a.Run(context.Background())
	if out.Status != StatusCompleted || out.Summary != "Fixed the typo." || out.Error != "" {
		t.Fatalf("outcome = %+v", out)
	}
	if got := sb.file("README.md"); got != "# Hello\n" {
		t.Errorf("README.md = %q after the edit", got)
	}
	if got := sb.commands(); len(got) != 1 || got[0] != "make test" {
		t.Errorf("commands run = %q", got)
	}
	if out.Steps != 4 || out.Spend.Calls != 4 {
		t.Errorf("steps %d, calls %d; want 4 and 4", out.Steps, out.Spend.Calls)
	}
	want := budget.Usage{PromptTokens: 4600, CachedTokens: 3000, CompletionTokens: 95}
	if out.Spend.Usage != want {
		t.Errorf("usage = %+v, want %+v", out.Spend.Usage, want)
	}
	if wantUSD := testPrice(t).Cost(want).USD(); out.Spend.SpentUSD != wantUSD {
		t.Errorf("spent $%v, want $%v", out.Spend.SpentUSD, wantUSD)
	}
	reqs := srv.Requests()
	// The tool results come back in the order of the calls.
	last := reqs[3].Messages
	if n := len(last); last[n-2].Role != "tool" || !strings.Contains(last[n-2].Content, "Replaced 1 occurrence") ||
		last[n-1].Role != "tool" || !strings.Contains(last[n-1].Content, "ran: make test") {
		t.Errorf("tool results out of order: %+v", last[n-2:])
	}
	// The prefix (system prompt, task, tools) is byte-identical in every call.
	for i, r := range reqs[1:] {
		if r.Messages[0].Content != reqs[0].Messages[0].Content || r.Messages[1].Content != reqs[0].Messages[1].Content {
			t.Errorf("request %d changed the prompt prefix", i+2)
		}
		if got, want := toolsJSON(t, r), toolsJSON(t, reqs[0]); got != want {
			t.Errorf("request %d changed the tool schemas", i+2)
		}
	}
	if !strings.Contains(traj.String(), `"type":"status"`) {
		t.Errorf("trajectory has no status event:\n%s", traj.String())
	}
}

func toolsJSON(t *testing.T, r fakellm.Request) string {
	b, err := json.Marshal(r.Tools)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

func TestLoopEndsOnPlainReply(t *testing.T) {
	srv := fakellm.New(t, fakellm.Text("Nothing to do: the README has no typo."))
	a, _ := newTestAgent(t, srv, newMemSandbox(nil), Config{})
	out := a.Run(context.Background())
	if out.Status != StatusCompleted || out.Summary != "Nothing to do: the README has no typo." {
		t.Errorf("outcome = %+v", out)
	}
}

// Malformed calls are never run; the model is told why; several in a row
// end the run.
func TestMalformedCallsAreNotRun(t *testing.T) {
	tests := []struct {
		name  string
		turn  fakellm.Turn
		error string
	}{
		{"invalid JSON", fakellm.ToolCall("run_command", `{"command": "rm -rf /`), "not valid JSON"},
		{"missing field", fakellm.ToolCall("run_command", `{"cmd":"ls"}`), `missing required argument "command"`},
		{"unknown field", fakellm.ToolCall("run_command", `{"command":"ls","sudo":true}`), `unknown field "sudo"`},
		{"unknown tool", fakellm.ToolCall("delete_repo", `{}`), `there is no tool "delete_repo"`},
		{"cut off", fakellm.ToolCall("run_command", `{"command":"echo hi"}`).WithFinishReason("length"), "cut off"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			sb := newMemSandbox(nil)
			srv := fakellm.New(t, tt.turn, tt.turn, tt.turn)
			a, _ := newTestAgent(t, srv, sb, Config{})
			out := a.Run(context.Background())
			if out.Status != StatusModelError || !strings.Contains(out.Error, "3 malformed tool calls in a row") {
				t.Errorf("outcome = %+v, want model_error after 3 malformed calls", out)
			}
			if ran := sb.commands(); len(ran) != 0 {
				t.Errorf("malformed calls ran commands: %q", ran)
			}
			reqs := srv.Requests()
			feedback := reqs[1].Messages[len(reqs[1].Messages)-1]
			if feedback.Role != "tool" || !strings.Contains(feedback.Content, tt.error) {
				t.Errorf("the model was told %q, want it to mention %q", feedback.Content, tt.error)
			}
		})
	}
	// A good call in between resets the count.
	sb := newMemSandbox(nil)
	bad := fakellm.ToolCall("nope", `{}`)
	srv := fakellm.New(t, bad, bad, fakellm.ToolCall("run_command", `{"command":"true"}`), bad, bad,
		fakellm.ToolCall("complete", `{"summary":"done"}`))
	a, _ := newTestAgent(t, srv, sb, Config{})
	if out := a.Run(context.Background()); out.Status != StatusCompleted {
		t.Errorf("interleaved malformed calls: %+v, want completed", out)
	}
}

func TestAskQuestionUnattended(t *testing.T) {
	srv := fakellm.New(t,
		fakellm.ToolCall("ask_question", `{"question":"Which branch should I target?"}`),
		fakellm.ToolCall("complete", `{"summary":"Assumed main."}`),
	)
	a, _ := newTestAgent(t, srv, newMemSandbox(nil), Config{})
	out := a.Run(context.Background())
	if out.Status != StatusCompleted || len(out.Questions) != 1 || out.Questions[0] != "Which branch should I target?" {
		t.Errorf("outcome = %+v", out)
	}
	msgs := srv.Requests()[1].Messages
	if answer := msgs[len(msgs)-1].Content; !strings.Contains(answer, "unattended") || !strings.Contains(answer, "assumptions") {
		t.Errorf("answer to the question = %q", answer)
	}
}

func TestLimits(t *testing.T) {
	loopTurn := fakellm.Func(func(fakellm.Request) fakellm.Turn {
		return fakellm.ToolCall("run_command", `{"command":"sleep"}`).WithUsage(2000, 100, 0)
	})
	t.Run("steps", func(t *testing.T) {
		srv := fakellm.New(t, loopTurn, loopTurn, loopTurn)
		a, _ := newTestAgent(t, srv, newMemSandbox(nil), Config{MaxSteps: 3})
		out := a.Run(context.Background())
		if out.Status != StatusStepLimit || out.Steps != 3 || len(srv.Requests()) != 3 {
			t.Errorf("outcome = %+v after %d requests, want step_limit after 3", out, len(srv.Requests()))
		}
	})
	t.Run("time", func(t *testing.T) {
		sb := newMemSandbox(nil)
		sb.exec = func(string) (sandbox.ExecResult, error) {
			time.Sleep(150 * time.Millisecond)
			return sandbox.ExecResult{}, nil
		}
		srv := fakellm.New(t)
		srv.Forever(loopTurn)
		a, _ := newTestAgent(t, srv, sb, Config{TimeLimit: 250 * time.Millisecond})
		out := a.Run(context.Background())
		if out.Status != StatusTimeLimit {
			t.Errorf("outcome = %+v, want time_limit", out)
		}
	})
	t.Run("budget", func(t *testing.T) {
		meter, _ := budget.NewMeter(0.002, nil)
		srv := fakellm.New(t)
		srv.Forever(loopTurn)
		a, _ := newTestAgent(t, srv, newMemSandbox(nil), Config{Meter: meter, MaxCompletionTokens: 1000})
		out := a.Run(context.Background())
		if out.Status != StatusBudgetExhausted {
			t.Errorf("outcome = %+v, want budget_exhausted", out)
		}
		if spent := meter.Totals().Spent; spent > budget.Nanodollars(2_000_000) {
			t.Errorf("spent %s of a $0.002 cap", spent)
		}
		if n := len(srv.Requests()); n < 2 {
			t.Errorf("only %d calls before the budget ran out; the test cap is too small to show anything", n)
		}
	})
	t.Run("caller's deadline", func(t *testing.T) {
		// The caller's deadline, not a stop by the user, passes during a
		// command: a time limit, like the run's own. It passes when the
		// command starts, however long the model's turn took.
		ctx := &passingDeadline{Context: context.Background(), done: make(chan struct{})}
		sb := newMemSandbox(nil)
		sb.exec = func(string) (sandbox.ExecResult, error) { ctx.pass(); return sandbox.ExecResult{}, ctx.Err() }
		srv := fakellm.New(t, loopTurn)
		a, _ := newTestAgent(t, srv, sb, Config{})
		if out := a.Run(ctx); out.Status != StatusTimeLimit {
			t.Errorf("outcome = %+v, want time_limit", out)
		}
	})
	t.Run("interrupted", func(t *testing.T) {
		ctx, cancel := context.WithCancel(context.Background())
		sb := newMemSandbox(nil)
		sb.exec = func(string) (sandbox.ExecResult, error) { cancel(); return sandbox.ExecResult{}, context.Canceled }
		srv := fakellm.New(t, loopTurn)
		a, _ := newTestAgent(t, srv, sb, Config{})
		if out := a.Run(ctx); out.Status != StatusInterrupted {
			t.Errorf("outcome = %+v, want interrupted", out)
		}
	})
}

func TestModelAndSandboxErrors(t *testing.T) {
	srv := fakellm.New(t, fakellm.Unauthorized())
	a, _ := newTestAgent(t, srv, newMemSandbox(nil), Config{})
	out := a.Run(context.Background())
	if out.Status != StatusModelError || !strings.Contains(out.Error, "401") {
		t.Errorf("outcome = %+v, want model_error naming the 401", out)
	}
	if strings.Contains(out.Error, testKey) {
		t.Errorf("the API key leaked into the outcome: %s", out.Error)
	}

	sb := newMemSandbox(nil)
	sb.exec = func(string) (sandbox.ExecResult, error) {
		return sandbox.ExecResult{}, errors.New("sandbox runner-x stopped: killed from outside: sandbox is stopped")
	}
	srv = fakellm.New(t, fakellm.ToolCall("run_command", `{"command":"ls"}`))
	a, _ = newTestAgent(t, srv, sb, Config{})
	out = a.Run(context.Background())
	if out.Status != StatusSandboxError || !strings.Contains(out.Error, "killed from outside") {
		t.Errorf("outcome = %+v, want sandbox_error", out)
	}
}

// A file-level error is the model's to handle, not the end of the run.
func TestToolErrorsGoBackToTheModel(t *testing.T) {
	sb := newMemSandbox(map[string]string{"a.txt": "one two two\n"})
	srv := fakellm.New(t,
		fakellm.ToolCall("read_file", `{"path":"missing.txt"}`),
		fakellm.ToolCall("edit_file", `{"path":"a.txt","old_string":"two","new_string":"2"}`),
		fakellm.ToolCall("edit_file", `{"path":"a.txt","old_string":"three","new_string":"3"}`),
		fakellm.ToolCall("edit_file", `{"path":"a.txt","old_string":"two","new_string":"2","replace_all":true}`),
		fakellm.ToolCall("read_file", `{"path":"../../etc/passwd"}`),
		fakellm.ToolCall("complete", `{"summary":"ok"}`),
	)
	a, _ := newTestAgent(t, srv, sb, Config{})
	if out := a.Run(context.Background()); out.Status != StatusCompleted {
		t.Fatalf("outcome = %+v", out)
	}
	wants := []string{"no such file", "occurs 2 times", "does not occur", "Replaced 2 occurrence(s)", "outside the workspace"}
	reqs := srv.Requests()
	for i, want := range wants {
		msgs := reqs[i+1].Messages
		if got := msgs[len(msgs)-1].Content; !strings.Contains(got, want) {
			t.Errorf("result %d = %q, want it to mention %q", i+1, got, want)
		}
	}
	if got := sb.file("a.txt"); got != "one 2 2\n" {
		t.Errorf("a.txt = %q", got)
	}
}

func TestContinueWithFeedback(t *testing.T) {
	sb := newMemSandbox(nil)
	srv := fakellm.New(t,
		fakellm.ToolCall("complete", `{"summary":"first try"}`),
		fakellm.ToolCall("write_file", `{"path":"fix.txt","content":"fixed\n"}`),
		fakellm.ToolCall("complete", `{"summary":"second try"}`),
	)
	a, _ := newTestAgent(t, srv, sb, Config{})
	if out := a.Run(context.Background()); out.Summary != "first try" {
		t.Fatalf("first outcome = %+v", out)
	}
	out := a.Continue(context.Background(), "The check failed:\nFAIL: fix.txt missing")
	if out.Status != StatusCompleted || out.Summary != "second try" || out.Steps != 3 {
		t.Errorf("second outcome = %+v", out)
	}
	msgs := srv.Requests()[1].Messages
	if last := msgs[len(msgs)-1]; last.Role != "user" || !strings.Contains(last.Content, "fix.txt missing") {
		t.Errorf("feedback message = %+v", last)
	}
}

func TestToolOutputIsCapped(t *testing.T) {
	sb := newMemSandbox(nil)
	sb.exec = func(string) (sandbox.ExecResult, error) {
		return sandbox.ExecResult{Output: "HEAD" + strings.Repeat("x", 100000) + "TAIL"}, nil
	}
	srv := fakellm.New(t, fakellm.ToolCall("run_command", `{"command":"cat big"}`), fakellm.Text("done"))
	a, _ := newTestAgent(t, srv, sb, Config{MaxToolOutput: 2000})
	a.Run(context.Background())
	msgs := srv.Requests()[1].Messages
	got := msgs[len(msgs)-1].Content
	if len(got) > 2200 || !strings.Contains(got, "Exit code 0") || !strings.HasSuffix(got, "TAIL") || !strings.Contains(got, "bytes cut from the middle") {
		t.Errorf("capped output (%d bytes): %.120q ... %q", len(got), got, got[max(0, len(got)-60):])
	}
}

// fakeClock is a Config.Now that moves only when told to.
type fakeClock struct {
	mu  sync.Mutex
	now time.Time
}

func (c *fakeClock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.now
}

func (c *fakeClock) Advance(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.now = c.now.Add(d)
}

// The run's clock passes the time limit while the context, whose deadline
// runs on the real clock, has not fired yet: the next model call is not
// made, and the run ends at its time limit instead of calling the model
// without a budget reservation.
func TestTimeLimitPassedBeforeTheContextFires(t *testing.T) {
	clock := &fakeClock{now: time.Now()}
	sb := newMemSandbox(nil)
	sb.exec = func(string) (sandbox.ExecResult, error) {
		clock.Advance(2 * time.Hour) // a slow tool, as the run's clock sees it
		return sandbox.ExecResult{}, nil
	}
	srv := fakellm.New(t, fakellm.ToolCall("run_command", `{"command":"make"}`))
	a, traj := newTestAgent(t, srv, sb, Config{TimeLimit: time.Hour, Now: clock.Now})
	out := a.Run(context.Background())
	if out.Status != StatusTimeLimit || !strings.Contains(out.Error, "time limit") {
		t.Errorf("outcome = %+v, want time_limit", out)
	}
	if n := len(srv.Requests()); n != 1 {
		t.Errorf("%d model calls, want 1: none after the time limit", n)
	}
	if tot := a.cfg.Meter.Totals(); tot.Reserved != 0 || tot.Calls != 1 {
		t.Errorf("meter = %+v, want one call charged and nothing held", tot)
	}
	if !strings.Contains(traj.String(), `"status":"time_limit"`) {
		t.Errorf("the trajectory does not end at the time limit:\n%s", traj.String())
	}
}

// passingDeadline is a context whose deadline passes when pass is called.
type passingDeadline struct {
	context.Context
	once sync.Once
	done chan struct{}
}

func (c *passingDeadline) pass()                 { c.once.Do(func() { close(c.done) }) }
func (c *passingDeadline) Done() <-chan struct{} { return c.done }
func (c *passingDeadline) Err() error {
	select {
	case <-c.done:
		return context.DeadlineExceeded
	default:
		return nil
	}
}
