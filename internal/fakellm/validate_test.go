package fakellm

import (
	"encoding/json"
	"strings"
	"testing"
)

// conversation decodes a request body written as JSON, the way the server
// does, so the cases read like what a client sends.
func conversation(t *testing.T, body string) Request {
	t.Helper()
	var req Request
	if err := json.Unmarshal([]byte(body), &req); err != nil {
		t.Fatalf("decode case body: %v", err)
	}
	return req
}

const tools = `"tools":[{"type":"function","function":{"name":"bash","parameters":{"type":"object"}}}]`

func TestValidate(t *testing.T) {
	tests := []struct {
		name string
		body string
		want []string // substrings, one per expected problem; none means valid
	}{
		{
			name: "plain conversation",
			body: `{"model":"m","messages":[{"role":"system","content":"s"},{"role":"user","content":"u"}]}`,
		},
		{
			name: "tool round trip with two calls",
			body: `{"model":"m",` + tools + `,"messages":[
				{"role":"user","content":"u"},
				{"role":"assistant","content":null,"tool_calls":[
					{"id":"a","type":"function","function":{"name":"bash","arguments":"{}"}},
					{"id":"b","type":"function","function":{"name":"bash","arguments":"{}"}}]},
				{"role":"tool","tool_call_id":"b","content":"out b"},
				{"role":"tool","tool_call_id":"a","content":"out a"},
				{"role":"assistant","content":"done"},
				{"role":"user","content":[{"type":"text","text":"more"}]}]}`,
		},
		{
			name: "missing model and messages",
			body: `{"messages":[]}`,
			want: []string{"model is missing", "messages is empty"},
		},
		{
			name: "unanswered tool call before the next user message",
			body: `{"model":"m",` + tools + `,"messages":[
				{"role":"user","content":"u"},
				{"role":"assistant","tool_calls":[
					{"id":"a","type":"function","function":{"name":"bash","arguments":"{}"}},
					{"id":"b","type":"function","function":{"name":"bash","arguments":"{}"}}]},
				{"role":"tool","tool_call_id":"a","content":"out"},
				{"role":"user","content":"next"}]}`,
			want: []string{`tool call id "b" of message 1 is not answered by a tool message before message 3 (user)`},
		},
		{
			name: "unanswered tool call at the end",
			body: `{"model":"m",` + tools + `,"messages":[
				{"role":"user","content":"u"},
				{"role":"assistant","tool_calls":[{"id":"a","type":"function","function":{"name":"bash","arguments":"{}"}}]}]}`,
			want: []string{`tool call id "a" of message 1 is not answered by a tool message before the end`},
		},
		{
			name: "tool message answering no call",
			body: `{"model":"m",` + tools + `,"messages":[
				{"role":"user","content":"u"},
				{"role":"assistant","tool_calls":[{"id":"a","type":"function","function":{"name":"bash","arguments":"{}"}}]},
				{"role":"tool","tool_call_id":"a","content":"out"},
				{"role":"tool","tool_call_id":"zzz","content":"out"}]}`,
			want: []string{`tool_call_id "zzz" matches no previous call`},
		},
		{
			name: "tool message after a user message",
			body: `{"model":"m","messages":[{"role":"user","content":"u"},{"role":"tool","tool_call_id":"a","content":"x"}]}`,
			want: []string{"does not follow an assistant message with tool_calls", `"a" matches no previous call`},
		},
		{
			name: "conversation starting with assistant",
			body: `{"model":"m","messages":[{"role":"assistant","content":"hi"},{"role":"user","content":"u"}]}`,
			want: []string{`starts with role "assistant"`},
		},
		{
			name: "tool calls without tools",
			body: `{"model":"m","messages":[
				{"role":"user","content":"u"},
				{"role":"assistant","tool_calls":[{"id":"a","type":"function","function":{"name":"bash","arguments":"{}"}}]},
				{"role":"tool","tool_call_id":"a","content":"x"}]}`,
			want: []string{"offers no tools"},
		},
		{
			name: "answer to a call of an earlier turn",
			body: `{"model":"m",` + tools + `,"messages":[
				{"role":"user","content":"u"},
				{"role":"assistant","tool_calls":[{"id":"a","type":"function","function":{"name":"bash","arguments":"{}"}}]},
				{"role":"tool","tool_call_id":"a","content":"x"},
				{"role":"assistant","tool_calls":[{"id":"b","type":"function","function":{"name":"bash","arguments":"{}"}}]},
				{"role":"tool","tool_call_id":"b","content":"x"},
				{"role":"tool","tool_call_id":"a","content":"again"}]}`,
			want: []string{`"a" is answered a second time`},
		},
		{
			name: "empty assistant message, unknown role, both token caps",
			body: `{"model":"m","max_tokens":5,"max_completion_tokens":5,"messages":[
				{"role":"user","content":"u"},{"role":"assistant"},{"role":"robot","content":"x"}]}`,
			want: []string{"both max_tokens and max_completion_tokens", "neither content nor tool_calls", `unknown role "robot"`},
		},
		{
			name: "duplicate call ids and a bad tool",
			body: `{"model":"m","tools":[{"type":"function","function":{"name":"bash","parameters":[1]}}],"messages":[
				{"role":"user","content":"u"},
				{"role":"assistant","tool_calls":[
					{"id":"a","type":"function","function":{"name":"bash","arguments":"{}"}},
					{"id":"a","type":"function","function":{"name":"bash","arguments":"{}"}}]},
				{"role":"tool","tool_call_id":"a","content":"x"}]}`,
			want: []string{`"a" already used by message 1`, "parameters are not a JSON object"},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := Validate(conversation(t, tt.body))
			if len(got) != len(tt.want) {
				t.Fatalf("Validate() = %d problems %v, want %d %q", len(got), got, len(tt.want), tt.want)
			}
			for i, want := range tt.want {
				if !strings.Contains(got[i].Error(), want) {
					t.Errorf("problem %d = %q, want it to contain %q", i, got[i], want)
				}
			}
		})
	}
}

func TestMessageContentForms(t *testing.T) {
	tests := []struct {
		raw      string
		wantText string
		wantHas  bool
	}{
		{`{"role":"user","content":"hi"}`, "hi", true},
		{`{"role":"user","content":""}`, "", true},
		{`{"role":"assistant","content":null}`, "", false},
		{`{"role":"assistant"}`, "", false},
		{`{"role":"user","content":[{"type":"text","text":"a"},{"type":"text","text":"b"}]}`, "ab", true},
	}
	for _, tt := range tests {
		var m Message
		if err := json.Unmarshal([]byte(tt.raw), &m); err != nil {
			t.Fatalf("Unmarshal(%s): %v", tt.raw, err)
		}
		if m.Content != tt.wantText || m.HasContent != tt.wantHas {
			t.Errorf("Unmarshal(%s) = (%q, %v), want (%q, %v)", tt.raw, m.Content, m.HasContent, tt.wantText, tt.wantHas)
		}
	}
	var m Message
	if err := json.Unmarshal([]byte(`{"role":"user","content":42}`), &m); err == nil {
		t.Errorf("Unmarshal(content 42) succeeded, want an error")
	}
}
