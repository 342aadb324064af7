package agent

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/runner-dev/runner/budget"
	"github.com/runner-dev/runner/internal/fakellm"
)

// recording reads a recorded reply of internal/fakellm/recordings.
func recording(t *testing.T, name string) string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("..", "internal", "fakellm", "recordings", name))
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// completionBody is a reply whose message is msg and usage usage, in the
// envelope every server uses.
func completionBody(msg, finish, usage string) string {
	return fmt.Sprintf(`{"id":"r1","object":"chat.completion","created":1,"model":"m","choices":[{"index":0,"message":%s,"finish_reason":%s}],"usage":%s}`,
		msg, finish, usage)
}

// Gemini's compatibility endpoint answers tool calls with an empty id (a
// recorded reply), and other servers with none at all: each call gets a
// generated id, its result answers it, the next request is well formed,
// and the trajectory names the ids it generated. Before generated ids,
// the second request could not be built and the task ended model_error.
func TestToolCallsWithoutIDsGetGeneratedIDs(t *testing.T) {
	tests := []struct {
		name  string
		reply string
	}{
		{"empty id (recorded from Gemini)", recording(t, "gemini/1.json")},
		{"no id, no type (Ollama's native shape)", completionBody(
			`{"role":"assistant","content":"","tool_calls":[{"function":{"name":"list_files","arguments":{}}},{"function":{"name":"list_files","arguments":{"path":"."}}}]}`,
			`"tool_calls"`, `{"prompt_tokens":100,"completion_tokens":10,"total_tokens":110}`)},
		{"null id and finish_reason stop", completionBody(
			`{"role":"assistant","content":null,"tool_calls":[{"id":null,"type":"function","function":{"name":"list_files","arguments":"{}"}}]}`,
			`"stop"`, `{"prompt_tokens":100,"completion_tokens":10,"total_tokens":110}`)},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			srv := fakellm.New(t, fakellm.Garbage(tt.reply), fakellm.Text("Nothing to fix.").WithUsage(200, 5, 0))
			a, traj := newTestAgent(t, srv, newMemSandbox(map[string]string{"README.md": "# Hello\n"}), Config{})
			out := a.Run(context.Background())
			if out.Status != StatusCompleted {
				t.Fatalf("outcome = %+v, want completed", out)
			}
			reqs := srv.Requests()
			if len(reqs) != 2 {
				t.Fatalf("%d requests, want 2", len(reqs))
			}
			msgs := reqs[1].Messages
			var ids []string
			for _, m := range msgs {
				for _, c := range m.ToolCalls {
					ids = append(ids, c.ID)
				}
			}
			var generated []string
			for _, e := range events(t, traj) {
				if e.Type == EventResponse {
					generated = append(generated, e.GeneratedCallIDs...)
				}
			}
			if len(ids) == 0 || strings.Join(ids, ",") != strings.Join(generated, ",") {
				t.Errorf("call ids sent %q, trajectory says generated %q", ids, generated)
			}
			for _, id := range ids {
				if len(id) != 9 || strings.Trim(id, "abcdefghijklmnopqrstuvwxyz0123456789") != "" {
					t.Errorf("generated id %q is not nine letters and digits", id)
				}
			}
		})
	}
}

// A server that reuses an id, within a reply or from an earlier one, has
// the repeat renamed: each tool result must answer exactly one call.
func TestRepeatedToolCallIDsAreRenamed(t *testing.T) {
	reply := func(ids ...string) string {
		var calls []string
		for _, id := range ids {
			calls = append(calls, fmt.Sprintf(`{"id":%q,"type":"function","function":{"name":"list_files","arguments":"{}"}}`, id))
		}
		return completionBody(`{"role":"assistant","tool_calls":[`+strings.Join(calls, ",")+`]}`, `"tool_calls"`,
			`{"prompt_tokens":100,"completion_tokens":10}`)
	}
	srv := fakellm.New(t,
		fakellm.Garbage(reply("call_0", "call_0")),
		fakellm.Garbage(reply("call_0", "r00001000")),
		fakellm.Text("done").WithUsage(300, 5, 0),
	)
	a, _ := newTestAgent(t, srv, newMemSandbox(nil), Config{})
	if out := a.Run(context.Background()); out.Status != StatusCompleted {
		t.Fatalf("outcome = %+v", out)
	}
	seen := map[string]bool{}
	for _, m := range srv.Requests()[2].Messages {
		for _, c := range m.ToolCalls {
			if seen[c.ID] {
				t.Errorf("id %q sent twice", c.ID)
			}
			seen[c.ID] = true
		}
	}
	if len(seen) != 4 || !seen["call_0"] || !seen["r00001000"] {
		t.Errorf("ids sent = %v, want the server's first call_0, its r00001000 and two generated", seen)
	}
}

// Arguments sent as a JSON object instead of a string are the call's
// arguments, and the call runs.
func TestObjectArgumentsAreAccepted(t *testing.T) {
	srv := fakellm.New(t,
		fakellm.Garbage(completionBody(
			`{"role":"assistant","content":"","tool_calls":[{"id":"call_1","function":{"name":"read_file","arguments":{"path": "README.md"}}}]}`,
			`"tool_calls"`, `{"prompt_tokens":100,"completion_tokens":10}`)),
		fakellm.Text("read it").WithUsage(200, 5, 0),
	)
	a, _ := newTestAgent(t, srv, newMemSandbox(map[string]string{"README.md": "# Hello\n"}), Config{})
	if out := a.Run(context.Background()); out.Status != StatusCompleted {
		t.Fatalf("outcome = %+v", out)
	}
	msgs := srv.Requests()[1].Messages
	last := msgs[len(msgs)-1]
	if last.Role != "tool" || !strings.Contains(last.Content, "# Hello") {
		t.Errorf("tool result = %+v, want README.md's content", last)
	}
	if args := msgs[len(msgs)-2].ToolCalls[0].Function.Arguments; args != `{"path":"README.md"}` {
		t.Errorf("arguments sent back = %q, want the object as a JSON string", args)
	}
}

// Cached prompt tokens are read from every field servers report them in,
// so the spend is what the server billed, not the full input price.
func TestCachedTokensFromEveryKnownField(t *testing.T) {
	tests := []struct {
		name  string
		usage string
	}{
		{"OpenAI prompt_tokens_details", `{"prompt_tokens":1000,"completion_tokens":10,"prompt_tokens_details":{"cached_tokens":800}}`},
		{"DeepSeek prompt_cache_hit_tokens", `{"prompt_tokens":1000,"completion_tokens":10,"prompt_cache_hit_tokens":800,"prompt_cache_miss_tokens":200}`},
		{"flat cached_tokens", `{"prompt_tokens":1000,"completion_tokens":10,"cached_tokens":800}`},
		{"Mistral num_cached_tokens", `{"prompt_tokens":1000,"completion_tokens":10,"num_cached_tokens":800}`},
		{"Mistral prompt_token_details", `{"prompt_tokens":1000,"completion_tokens":10,"prompt_token_details":{"cached_tokens":800}}`},
		{"cache_read_input_tokens", `{"prompt_tokens":1000,"completion_tokens":10,"cache_read_input_tokens":800}`},
		{"input_tokens_details", `{"prompt_tokens":1000,"completion_tokens":10,"input_tokens_details":{"cached_tokens":800}}`},
		{"zero in one field, the count in another", `{"prompt_tokens":1000,"completion_tokens":10,"prompt_tokens_details":{"cached_tokens":0},"prompt_cache_hit_tokens":800}`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			srv := fakellm.New(t, fakellm.Garbage(completionBody(`{"role":"assistant","content":"done"}`, `"stop"`, tt.usage)))
			meter, _ := budget.NewMeter(0, nil)
			a, _ := newTestAgent(t, srv, newMemSandbox(nil), Config{Meter: meter})
			if out := a.Run(context.Background()); out.Status != StatusCompleted {
				t.Fatalf("outcome = %+v", out)
			}
			want := budget.Usage{PromptTokens: 1000, CachedTokens: 800, CompletionTokens: 10}
			if got := meter.Totals(); got.Usage != want || got.Spent != testPrice(t).Cost(want) {
				t.Errorf("charged %+v for %s, want %+v for %s", got.Usage, got.Spent, want, testPrice(t).Cost(want))
			}
		})
	}
}

// A reply with more completion tokens than the call was granted is an
// overrun even when it cost no more than was reserved (the prompt's bound
// was loose): the server ignored the limit the budget rests on, so the run
// ends budget_exhausted, the excess is recorded, and the tree of meters
// makes no further capped call.
func TestCompletionBeyondTheLimitIsAnOverrun(t *testing.T) {
	srv := fakellm.New(t, fakellm.ToolCall("list_files", `{}`).WithUsage(10, 1500, 0))
	run, _ := budget.NewMeter(10, nil)
	task, _ := budget.NewMeter(0, run)
	a, traj := newTestAgent(t, srv, newMemSandbox(nil), Config{Meter: task, MaxCompletionTokens: 1000})
	out := a.Run(context.Background())
	if out.Status != StatusBudgetExhausted || !strings.Contains(out.Error, budget.ErrOverrun.Error()) {
		t.Fatalf("outcome = %+v, want budget_exhausted for the overrun", out)
	}
	price := testPrice(t)
	excess := price.Cost(budget.Usage{CompletionTokens: 500})
	if got := run.Totals().Overrun; got != excess || out.Spend.OverrunUSD != excess.USD() {
		t.Errorf("overrun recorded %s (outcome $%v), want %s: the 500 tokens beyond the limit", got, out.Spend.OverrunUSD, excess)
	}
	var resp Event
	for _, e := range events(t, traj) {
		if e.Type == EventResponse {
			resp = e
		}
	}
	if resp.OverrunUSD != excess.USD() {
		t.Errorf("trajectory overrun $%v, want $%v", resp.OverrunUSD, excess.USD())
	}
	if _, err := run.Reserve(price, 10, 100, 1); err == nil {
		t.Error("the run's meter reserves again after the overrun")
	}
}

// Reasoning a server sent is kept in the history and the trajectory,
// redacted like everything else.
func TestReasoningIsKeptAndRedacted(t *testing.T) {
	body := completionBody(`{"role":"assistant","content":"","reasoning_content":"I should not print sk-test-canary-0123456789abcdef.",`+
		`"tool_calls":[{"id":"call_1","type":"function","function":{"name":"list_files","arguments":"{}"},"extra_content":{"google":{"thought_signature":"c2lnbmF0dXJl"}}}]}`,
		`"tool_calls"`, `{"prompt_tokens":100,"completion_tokens":10}`)
	srv := fakellm.New(t, fakellm.Garbage(body), fakellm.Text("done").WithUsage(200, 5, 0))
	a, traj := newTestAgent(t, srv, newMemSandbox(nil), Config{})
	if out := a.Run(context.Background()); out.Status != StatusCompleted {
		t.Fatalf("outcome = %+v", out)
	}
	var kept *Message
	for _, m := range a.History() {
		if m.Role == RoleAssistant && len(m.ToolCalls) > 0 {
			kept = &m
		}
	}
	if kept == nil || kept.ReasoningField != "reasoning_content" || !strings.Contains(kept.Reasoning, testKey) ||
		string(kept.ToolCalls[0].Extra) != `{"google":{"thought_signature":"c2lnbmF0dXJl"}}` {
		t.Fatalf("history keeps %+v, want the reasoning and the signature as received", kept)
	}
	if strings.Contains(traj.String(), testKey) {
		t.Error("the trajectory shows the key from the reasoning")
	}
	var found bool
	for _, e := range events(t, traj) {
		if e.Type == EventResponse && e.Message != nil && len(e.Message.ToolCalls) > 0 {
			found = strings.Contains(e.Message.Reasoning, "[REDACTED]") && json.Valid(e.Message.ToolCalls[0].Extra)
		}
	}
	if !found {
		t.Error("the trajectory's response lacks the redacted reasoning or the signature")
	}
}
