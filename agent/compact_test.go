package agent

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"testing"

	"github.com/runner-dev/runner/internal/fakellm"
	"github.com/runner-dev/runner/sandbox"
)

// requestTokens is the fake server's token count of a request: a quarter of its
// bytes, as for English text.
func requestTokens(r fakellm.Request) int64 { return int64(len(r.Body)) / 4 }

// compactionScript answers like a model that runs a command per turn and
// completes after turns turns; requests without tools are summaries.
func compactionScript(turns int) fakellm.Turn {
	var mu sync.Mutex
	n := 0
	return fakellm.Func(func(r fakellm.Request) fakellm.Turn {
		mu.Lock()
		defer mu.Unlock()
		prompt := requestTokens(r)
		if len(r.Tools) == 0 {
			return fakellm.Text(fmt.Sprintf("Summary: ran %d commands so far; all printed data.", n)).WithUsage(prompt, 40, 0)
		}
		n++
		if n > turns {
			return fakellm.ToolCall("complete", `{"summary":"all done"}`).WithUsage(prompt, 20, 0)
		}
		return fakellm.ToolCall("run_command", fmt.Sprintf(`{"command":"cat part-%d.txt"}`, n)).WithUsage(prompt, 30, 0)
	})
}

func TestCompactionKeepsPromptUnderWindow(t *testing.T) {
	const window = 20000
	sb := newMemSandbox(nil)
	sb.exec = func(cmd string) (sandbox.ExecResult, error) {
		return sandbox.ExecResult{Output: cmd + "\n" + strings.Repeat("data ", 400)}, nil // 2 KB per turn
	}
	srv := fakellm.New(t)
	srv.Forever(compactionScript(200))
	a, traj := newTestAgent(t, srv, sb, Config{ContextWindow: window, MaxSteps: 400})
	out := a.Run(context.Background())
	if out.Status != StatusCompleted || out.Compactions == 0 {
		t.Fatalf("outcome = %+v, want completed with compactions", out)
	}
	maxPrompt := int64(0)
	for i, r := range srv.Requests() {
		p := requestTokens(r)
		maxPrompt = max(maxPrompt, p)
		if p > window {
			t.Errorf("request %d has %d prompt tokens, over the %d window", i+1, p, window)
		}
	}
	t.Logf("%d requests, %d compactions, largest prompt %d tokens of %d", len(srv.Requests()), out.Compactions, maxPrompt, window)
	// The trajectory keeps the full history: all 200 tool results, and
	// every compaction marked.
	results, compactions := 0, 0
	for _, e := range events(t, traj) {
		switch e.Type {
		case EventToolResult:
			results++
			if !strings.Contains(e.Message.Content, "data data") && e.Tool == "run_command" {
				t.Errorf("trajectory stored an elided result: %.80q", e.Message.Content)
			}
		case EventCompaction:
			compactions++
		}
	}
	if results != 201 || compactions != out.Compactions {
		t.Errorf("trajectory has %d tool results and %d compactions, want 201 and %d", results, compactions, out.Compactions)
	}
	// The prefix survives every compaction byte for byte.
	reqs := srv.Requests()
	for _, r := range reqs {
		if len(r.Tools) > 0 && (r.Messages[0].Content != reqs[0].Messages[0].Content || r.Messages[1].Content != reqs[0].Messages[1].Content) {
			t.Fatalf("a compaction changed the prompt prefix")
		}
	}
}

// Without compaction the same run outgrows the window: the test above
// shows something.
func TestWithoutCompactionPromptGrows(t *testing.T) {
	sb := newMemSandbox(nil)
	sb.exec = func(cmd string) (sandbox.ExecResult, error) {
		return sandbox.ExecResult{Output: strings.Repeat("data ", 400)}, nil
	}
	srv := fakellm.New(t)
	srv.Forever(compactionScript(60))
	a, _ := newTestAgent(t, srv, sb, Config{ContextWindow: 20000, NoCompaction: true, MaxSteps: 400})
	if out := a.Run(context.Background()); out.Status != StatusCompleted || out.Compactions != 0 {
		t.Fatalf("outcome = %+v", out)
	}
	reqs := srv.Requests()
	if last := requestTokens(reqs[len(reqs)-1]); last <= 20000 {
		t.Errorf("last prompt %d tokens; expected the uncompacted run to pass 20000", last)
	}
}

// A server that says the context is exceeded triggers a compaction and a
// new try, not the end of the run.
func TestContextLengthErrorCompacts(t *testing.T) {
	sb := newMemSandbox(nil)
	sb.exec = func(cmd string) (sandbox.ExecResult, error) {
		return sandbox.ExecResult{Output: strings.Repeat("x", 3000)}, nil
	}
	turns := []fakellm.Turn{}
	for i := 0; i < 6; i++ {
		turns = append(turns, fakellm.ToolCall("run_command", fmt.Sprintf(`{"command":"step %d"}`, i)))
	}
	turns = append(turns, fakellm.ContextLengthExceeded(), fakellm.Text("Summary of the steps."),
		fakellm.ToolCall("complete", `{"summary":"done"}`))
	srv := fakellm.New(t, turns...)
	a, _ := newTestAgent(t, srv, sb, Config{KeepRecent: 2})
	out := a.Run(context.Background())
	if out.Status != StatusCompleted || out.Compactions == 0 {
		t.Errorf("outcome = %+v, want completed after a compaction", out)
	}
}
