package agent

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"

	"github.com/runner-dev/runner/internal/fakellm"
	"github.com/runner-dev/runner/sandbox"
)

// rawMessages returns the messages of a request body exactly as sent.
func rawMessages(t *testing.T, r fakellm.Request) []json.RawMessage {
	t.Helper()
	var body struct {
		Messages []json.RawMessage `json:"messages"`
	}
	if err := json.Unmarshal(r.Body, &body); err != nil {
		t.Fatal(err)
	}
	return body.Messages
}

// lastStep is the last request of a run that was a step (not a summary).
func lastStep(t *testing.T, reqs []fakellm.Request) fakellm.Request {
	t.Helper()
	for i := len(reqs) - 1; i >= 0; i-- {
		if len(reqs[i].Tools) > 0 {
			return reqs[i]
		}
	}
	t.Fatal("no step request")
	return fakellm.Request{}
}

// verboseScript is compactionScript with long commands, which eliding
// tool results does not shrink, so that history gets summarized too.
func verboseScript(turns int) fakellm.Turn {
	var mu sync.Mutex
	n := 0
	return fakellm.Func(func(r fakellm.Request) fakellm.Turn {
		mu.Lock()
		defer mu.Unlock()
		prompt := requestTokens(r)
		if len(r.Tools) == 0 {
			return fakellm.Text(fmt.Sprintf("Summary: ran %d commands so far.", n)).WithUsage(prompt, 40, 0)
		}
		n++
		if n > turns {
			return fakellm.ToolCall("complete", `{"summary":"all done"}`).WithUsage(prompt, 20, 0)
		}
		cmd := fmt.Sprintf("echo part-%d %s", n, strings.Repeat("x", 1200))
		return fakellm.ToolCall("run_command", fmt.Sprintf(`{"command":%q}`, cmd)).WithUsage(prompt, 30, 0)
	})
}

// A run that ran out of steps after compacting its history goes on from
// its trajectory: the first request of the continuation starts with the
// messages of the last request of the run, byte for byte as the server
// received them, so that a provider's prompt cache still applies.
func TestResumeSendsTheLastPrefixByteForByte(t *testing.T) {
	const window = 8000
	sb := newMemSandbox(nil)
	sb.exec = func(cmd string) (sandbox.ExecResult, error) {
		return sandbox.ExecResult{Output: cmd + "\n" + strings.Repeat("data ", 400)}, nil
	}
	first := fakellm.New(t)
	first.Forever(verboseScript(200))
	a, traj := newTestAgent(t, first, sb, Config{ContextWindow: window, MaxSteps: 40})
	out := a.Run(context.Background())
	if out.Status != StatusStepLimit || out.Compactions == 0 {
		t.Fatalf("first run = %+v, want step_limit after compactions", out)
	}
	stages := map[string]bool{}
	for _, e := range events(t, bytes.NewBuffer(bytes.Clone(traj.Bytes()))) {
		if e.Type == EventCompaction {
			stages[e.Stage] = true
		}
	}
	if !stages["elide"] || !stages["summarize"] {
		t.Fatalf("compaction stages of the first run = %v, want both elide and summarize", stages)
	}

	history, err := ReadHistory([]string{testKey}, HistorySource{Name: "t1.1.jsonl", R: bytes.NewReader(traj.Bytes())})
	if err != nil {
		t.Fatal(err)
	}
	second := fakellm.New(t)
	second.Forever(verboseScript(1))
	b, traj2 := newTestAgent(t, second, sb, Config{ContextWindow: window, MaxSteps: 10})
	out2 := b.Resume(context.Background(), history, "Go on where you stopped.", 1)
	if out2.Status != StatusCompleted {
		t.Fatalf("continuation = %+v, want completed", out2)
	}

	before := rawMessages(t, lastStep(t, first.Requests()))
	after := rawMessages(t, second.Requests()[0])
	if len(after) <= len(before) {
		t.Fatalf("the continuation's first request has %d messages, the last request before had %d", len(after), len(before))
	}
	for i := range before {
		if !bytes.Equal(before[i], after[i]) {
			t.Fatalf("message %d differs:\nbefore %s\nafter  %s", i, before[i], after[i])
		}
	}
	// What follows: the last reply, its tool result, and the new prompt.
	rest := after[len(before):]
	if len(rest) != 3 {
		t.Fatalf("%d messages after the prefix, want 3 (reply, tool result, prompt): %s", len(rest), rest)
	}
	var prompt struct{ Role, Content string }
	json.Unmarshal(rest[2], &prompt)
	if prompt.Role != RoleUser || prompt.Content != "Go on where you stopped." {
		t.Errorf("last message = %s, want the continuation's prompt", rest[2])
	}
	// The continuation's trajectory reads back after the first one.
	if _, err := ReadHistory(nil, HistorySource{Name: "1", R: bytes.NewReader(traj.Bytes())},
		HistorySource{Name: "2", R: bytes.NewReader(traj2.Bytes())}); err != nil {
		t.Errorf("reading both trajectories: %v", err)
	}
	if _, err := ReadHistory(nil, HistorySource{Name: "2", R: bytes.NewReader(traj2.Bytes())}); !errors.Is(err, ErrCorruptTrajectory) {
		t.Errorf("reading the continuation's trajectory alone: err = %v, want ErrCorruptTrajectory", err)
	}
}

// A trajectory that does not hold together is refused with a message
// naming it.
func TestReadHistoryRefusesCorruptTrajectories(t *testing.T) {
	sys := `{"type":"message","message":{"role":"system","content":"s"}}`
	task := `{"type":"message","message":{"role":"user","content":"t"}}`
	reply := `{"type":"response","message":{"role":"assistant","tool_calls":[{"id":"c1","name":"run_command","arguments":"{}"}]}}`
	result := `{"type":"tool_result","message":{"role":"tool","tool_call_id":"c1","name":"run_command","content":"ok"}}`
	tests := map[string]string{
		"empty":                "",
		"torn line":            sys + "\n" + task + "\n" + `{"type":"respo`,
		"not JSON":             sys + "\nhello\n",
		"no task":              sys + "\n",
		"request count":        sys + "\n" + task + "\n" + `{"type":"request","step":1,"messages":5}`,
		"elide out of range":   sys + "\n" + task + "\n" + reply + "\n" + result + "\n" + `{"type":"compaction","stage":"elide","elided_messages":[9]}`,
		"elide not a result":   sys + "\n" + task + "\n" + reply + "\n" + result + "\n" + `{"type":"compaction","stage":"elide","elided_messages":[2]}`,
		"summary out of range": sys + "\n" + task + "\n" + `{"type":"compaction","stage":"summarize","replaced":4,"summary":"x"}`,
		"message without body": sys + "\n" + task + "\n" + `{"type":"tool_result"}`,
	}
	for name, content := range tests {
		t.Run(name, func(t *testing.T) {
			_, err := ReadHistory(nil, HistorySource{Name: "out/trajectories/x.1.jsonl", R: strings.NewReader(content)})
			if !errors.Is(err, ErrCorruptTrajectory) || !strings.Contains(err.Error(), "x.1.jsonl") && name != "empty" && name != "no task" {
				t.Errorf("err = %v, want ErrCorruptTrajectory naming the file", err)
			}
		})
	}
}

// Calls the run ended during get a result saying so; a secret value in
// an old trajectory never reaches the history.
func TestReadHistoryAnswersPendingCallsAndRedacts(t *testing.T) {
	const secret = "s3cr3t-value-that-leaked-0123456789"
	lines := strings.Join([]string{
		`{"type":"message","message":{"role":"system","content":"s"}}`,
		`{"type":"message","message":{"role":"user","content":"t"}}`,
		`{"type":"response","message":{"role":"assistant","tool_calls":[` +
			`{"id":"c1","name":"run_command","arguments":"{\"command\":\"echo ` + secret + `\"}"},` +
			`{"id":"c2","name":"read_file","arguments":"{}"}]}}`,
		`{"type":"tool_result","message":{"role":"tool","tool_call_id":"c1","name":"run_command","content":"` + secret + `"}}`,
	}, "\n")
	hist, err := ReadHistory([]string{secret}, HistorySource{Name: "x", R: strings.NewReader(lines)})
	if err != nil {
		t.Fatal(err)
	}
	h := hist.Messages
	if len(h) != 5 || h[4].Role != RoleTool || h[4].ToolCallID != "c2" || !strings.Contains(h[4].Content, "Not run") {
		t.Fatalf("history = %+v, want the pending call c2 answered", h)
	}
	for i, m := range h {
		b, _ := json.Marshal(m)
		if strings.Contains(string(b), secret) {
			t.Errorf("message %d holds the secret: %s", i, b)
		}
	}
}
