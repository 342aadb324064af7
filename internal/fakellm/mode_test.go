package fakellm

import (
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"strings"
	"testing"
)

// Every recorded reply is a chat completion with a message, and is listed
// with its source in recordings/README.md.
func TestRecordingsAreCompletionsWithSources(t *testing.T) {
	readme, err := os.ReadFile("recordings/README.md")
	if err != nil {
		t.Fatal(err)
	}
	providers := RecordedProviders()
	if len(providers) < 9 {
		t.Errorf("recorded providers = %v, want at least nine", providers)
	}
	for _, p := range providers {
		bodies, err := RecordedBodies(p)
		if err != nil || len(bodies) == 0 {
			t.Fatalf("%s: %d bodies, %v", p, len(bodies), err)
		}
		for i, b := range bodies {
			name := fmt.Sprintf("%s/%d.json", p, i+1)
			if !strings.Contains(string(readme), "`"+name+"`") {
				t.Errorf("%s is not listed in recordings/README.md", name)
			}
			var c struct {
				Object  string `json:"object"`
				Choices []struct {
					Message *json.RawMessage `json:"message"`
				} `json:"choices"`
			}
			if err := json.Unmarshal([]byte(b), &c); err != nil || c.Object != "chat.completion" || len(c.Choices) != 1 || c.Choices[0].Message == nil {
				t.Errorf("%s is not a chat completion with one message: %v", name, err)
			}
		}
	}
}

// assistantWith is a request body whose history has one assistant message
// calling bash with the given id and extra fields, answered by a tool
// message.
func assistantWith(id, fields, callFields, top string) string {
	return `{"model":"m",` + tools + top + `,"messages":[
		{"role":"user","content":"u"},
		{"role":"assistant","content":null` + fields + `,"tool_calls":[{"id":"` + id + `","type":"function","function":{"name":"bash","arguments":"{}"}` + callFields + `}]},
		{"role":"tool","tool_call_id":"` + id + `","content":"ok"}]}`
}

// Each mode refuses what its provider refuses, with the provider's status
// and words, without failing the test or using a turn, and lets through
// what the provider accepts.
func TestModesRefuseLikeTheirProviders(t *testing.T) {
	tests := []struct {
		name   string
		mode   Mode
		issue  string // a recorded reply played first, whose contents the mode remembers
		body   string
		status int
		want   string
	}{
		{"mistral refuses max_completion_tokens", ModeMistral, "", assistantWith("abcdefghi", "", "", `,"max_completion_tokens":100`),
			http.StatusUnprocessableEntity, `"loc":["body","max_completion_tokens"],"msg":"Extra inputs are not permitted"`},
		{"mistral refuses reasoning_content", ModeMistral, "", assistantWith("abcdefghi", `,"reasoning_content":"x"`, "", `,"max_tokens":100`),
			http.StatusUnprocessableEntity, `"loc":["body","messages",1,"assistant","reasoning_content"]`},
		{"mistral refuses a long tool call id", ModeMistral, "", assistantWith("call_abcdef", "", "", `,"max_tokens":100`),
			http.StatusBadRequest, "Tool call id was call_abcdef but must be a-z, A-Z, 0-9, with a length of 9."},
		{"mistral accepts max_tokens", ModeMistral, "", assistantWith("abcdefghi", "", "", `,"max_tokens":100`), http.StatusOK, ""},
		{"deepseek wants reasoning_content", ModeDeepSeek, "", assistantWith("call_1", "", "", ""),
			http.StatusBadRequest, "Missing `reasoning_content` field in the assistant message at message index 1"},
		{"deepseek wants it as sent", ModeDeepSeek, reasoningReply("call_1", "I will run bash."), assistantWith("call_1", `,"reasoning_content":"I will run bash"`, "", ""),
			http.StatusBadRequest, "must be passed back to the API"},
		{"deepseek accepts it as sent", ModeDeepSeek, reasoningReply("call_1", "I will run bash."), assistantWith("call_1", `,"reasoning_content":"I will run bash."`, "", ""),
			http.StatusOK, ""},
		{"deepseek accepts an empty one on a call it gave none", ModeDeepSeek, "", assistantWith("call_1", `,"reasoning_content":""`, "", ""), http.StatusOK, ""},
		{"gemini wants its signature back", ModeGemini, signedReply("c2ln"), assistantWith("r1", "", "", ""),
			http.StatusBadRequest, `[{"error":{"code":400,"message":"Function call is missing a thought_signature`},
		{"gemini refuses a changed signature", ModeGemini, signedReply("c2ln"), assistantWith("r1", "", `,"extra_content":{"google":{"thought_signature":"c2lm"}}`, ""),
			http.StatusBadRequest, "Corrupted thought signature."},
		{"gemini accepts it on the call", ModeGemini, signedReply("c2ln"), assistantWith("r1", "", `,"extra_content":{"google":{"thought_signature":"c2ln"}}`, ""), http.StatusOK, ""},
		{"gemini accepts it on the message", ModeGemini, signedReply("c2ln"), assistantWith("r1", `,"extra_content":{"google":{"thought_signature":"c2ln"}}`, "", ""), http.StatusOK, ""},
		{"groq refuses reasoning on a message", ModeGroq, "", assistantWith("call_1", `,"reasoning":"x"`, "", ""),
			http.StatusBadRequest, "'messages.1' : for 'role:assistant' the following must be satisfied[('messages.1' : property 'reasoning' is unsupported)]"},
		{"groq refuses an unknown request field", ModeGroq, "", assistantWith("call_1", "", "", `,"store":false`), http.StatusBadRequest, "property 'store' is unsupported"},
		{"openai refuses extra_content", ModeOpenAI, "", assistantWith("call_1", "", `,"extra_content":{}`, ""),
			http.StatusBadRequest, "Additional properties are not allowed ('tool_calls.0.extra_content' was unexpected) - 'messages.1'"},
		{"ollama takes both limits", ModeOllama, "", assistantWith("call_1", `,"reasoning":"x"`, "", `,"max_tokens":10,"max_completion_tokens":10`), http.StatusOK, ""},
		{"openrouter refuses changed reasoning_details", ModeOpenRouter, `{"object":"chat.completion","choices":[{"message":{"role":"assistant","content":"a","reasoning_details":[{"type":"reasoning.text","text":"t"}]}}]}`,
			assistantWith("call_1", `,"reasoning_details":[{"type":"reasoning.text","text":"u"}]`, "", ""), http.StatusBadRequest, "reasoning_details"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			rec := &recorder{TB: t}
			s := New(rec)
			s.SetMode(tt.mode)
			if tt.issue != "" {
				s.Add(Recorded(tt.issue))
				if status, _, body := post(t, s.URL(), `{"model":"m","messages":[{"role":"user","content":"u"}]}`); status != http.StatusOK {
					t.Fatalf("first request: %d %s", status, body)
				}
			}
			if tt.status == http.StatusOK {
				s.Add(Text("ok"))
			}
			status, _, body := post(t, s.URL(), tt.body)
			if status != tt.status || !strings.Contains(string(body), tt.want) {
				t.Errorf("answer = %d %s, want %d with %s", status, body, tt.status, tt.want)
			}
			if got := rec.failures(); len(got) > 0 {
				t.Errorf("the test was failed: %q", got)
			}
			if refused := len(s.Refusals()); (tt.status != http.StatusOK) != (refused == 1) {
				t.Errorf("%d refusals recorded", refused)
			}
		})
	}
}

func reasoningReply(id, reasoning string) string {
	b, _ := json.Marshal(map[string]any{"object": "chat.completion", "choices": []any{map[string]any{"message": map[string]any{
		"role": "assistant", "reasoning_content": reasoning,
		"tool_calls": []any{map[string]any{"id": id, "type": "function", "function": map[string]any{"name": "bash", "arguments": "{}"}}},
	}}}})
	return string(b)
}

func signedReply(sig string) string {
	b, _ := json.Marshal(map[string]any{"object": "chat.completion", "choices": []any{map[string]any{"message": map[string]any{
		"role": "assistant",
		"tool_calls": []any{map[string]any{"id": "", "type": "function", "function": map[string]any{"name": "bash", "arguments": "{}"},
			"extra_content": map[string]any{"google": map[string]any{"thought_signature": sig}}}},
	}}}})
	return string(b)
}

// Without a mode, both limit fields at once are still a client bug.
func TestBothLimitsFailOutsideTheModesThatTakeThem(t *testing.T) {
	rec := &recorder{TB: t}
	s := New(rec)
	s.SetModeFor("local", ModeVLLM)
	body := `{"model":"%s","max_tokens":10,"max_completion_tokens":10,"messages":[{"role":"user","content":"u"}]}`
	s.Add(Text("ok"))
	if status, _, _ := post(t, s.URL(), strings.Replace(body, "%s", "local", 1)); status != http.StatusOK {
		t.Errorf("vLLM mode: status %d, want 200", status)
	}
	if status, _, _ := post(t, s.URL(), strings.Replace(body, "%s", "other", 1)); status != http.StatusBadRequest {
		t.Errorf("default: status %d, want 400", status)
	}
	if got := rec.failures(); len(got) != 1 || !strings.Contains(got[0], "both max_tokens and max_completion_tokens") {
		t.Errorf("failures = %q", got)
	}
}
