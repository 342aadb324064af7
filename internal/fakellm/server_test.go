package fakellm

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"
)

// recorder is a testing.TB that keeps the failures fakellm reports instead
// of failing the real test, so the tests can assert on them.
type recorder struct {
	testing.TB
	mu   sync.Mutex
	errs []string
}

func (r *recorder) Errorf(format string, args ...any) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.errs = append(r.errs, fmt.Sprintf(format, args...))
}

func (r *recorder) Error(args ...any) { r.Errorf("%s", fmt.Sprint(args...)) }
func (r *recorder) Helper()           {}

func (r *recorder) failures() []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]string(nil), r.errs...)
}

// post sends body to the server's chat completions endpoint.
func post(t *testing.T, url, body string) (int, http.Header, []byte) {
	t.Helper()
	res, err := http.Post(url+"/chat/completions", "application/json", strings.NewReader(body))
	if err != nil {
		t.Fatalf("POST: %v", err)
	}
	defer res.Body.Close()
	b, err := io.ReadAll(res.Body)
	if err != nil {
		t.Fatalf("read reply: %v", err)
	}
	return res.StatusCode, res.Header, b
}

const unansweredCall = `{"model":"m",` + tools + `,"messages":[
	{"role":"user","content":"u"},
	{"role":"assistant","tool_calls":[{"id":"call_1","type":"function","function":{"name":"bash","arguments":"{}"}}]},
	{"role":"user","content":"next"}]}`

const wellFormed = `{"model":"m",` + tools + `,"messages":[
	{"role":"user","content":"u"},
	{"role":"assistant","tool_calls":[{"id":"call_1","type":"function","function":{"name":"bash","arguments":"{}"}}]},
	{"role":"tool","tool_call_id":"call_1","content":"ok"}]}`

func TestServerFlagsMalformedConversation(t *testing.T) {
	rec := &recorder{TB: t}
	s := New(rec, Text("never played"))

	status, _, body := post(t, s.URL(), unansweredCall)

	if status != http.StatusBadRequest {
		t.Errorf("status = %d, want 400", status)
	}
	if !strings.Contains(string(body), "call_1") {
		t.Errorf("error body = %s, want it to name call_1", body)
	}
	got := rec.failures()
	if len(got) != 1 || !strings.Contains(got[0], `tool call id "call_1"`) || !strings.Contains(got[0], "not answered") {
		t.Errorf("reported failures = %q, want one naming unanswered call_1", got)
	}
	if n := len(s.Requests()); n != 1 {
		t.Errorf("recorded %d requests, want 1", n)
	}
	s.Verify()
	if got := rec.failures(); len(got) != 2 || !strings.Contains(got[1], "1 of 1 scripted turns never used") {
		t.Errorf("after Verify failures = %q, want the unused turn reported", got)
	}
}

func TestServerAcceptsWellFormedConversation(t *testing.T) {
	rec := &recorder{TB: t}
	s := New(rec, Text("fine"))

	status, _, body := post(t, s.URL(), wellFormed)

	if status != http.StatusOK {
		t.Errorf("status = %d (%s), want 200", status, body)
	}
	s.Verify()
	if got := rec.failures(); len(got) != 0 {
		t.Errorf("reported failures = %q, want none", got)
	}
}

func TestServerRejectsInvalidJSONAndMissingModel(t *testing.T) {
	tests := []struct {
		name, body, want string
	}{
		{"invalid JSON", `{"model":`, "not a valid request"},
		{"missing model", `{"messages":[{"role":"user","content":"u"}]}`, "model is missing"},
		{"streaming", `{"model":"m","stream":true,"messages":[{"role":"user","content":"u"}]}`, "stream is set"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			rec := &recorder{TB: t}
			s := New(rec)
			status, _, _ := post(t, s.URL(), tt.body)
			if status != http.StatusBadRequest {
				t.Errorf("status = %d, want 400", status)
			}
			if got := rec.failures(); len(got) != 1 || !strings.Contains(got[0], tt.want) {
				t.Errorf("failures = %q, want one containing %q", got, tt.want)
			}
		})
	}
}

func TestServerScriptExhausted(t *testing.T) {
	rec := &recorder{TB: t}
	s := New(rec, Text("one"))
	post(t, s.URL(), wellFormed)

	status, _, _ := post(t, s.URL(), wellFormed)

	if status != http.StatusInternalServerError {
		t.Errorf("status = %d, want 500", status)
	}
	if got := rec.failures(); len(got) != 1 || !strings.Contains(got[0], "request 2 arrived but the script has only 1 turns") {
		t.Errorf("failures = %q, want one about the exhausted script", got)
	}
}

// TestReplyWireFormat decodes replies without the fake's own types, as a
// real client would, and checks the fields of the Chat Completions format.
func TestReplyWireFormat(t *testing.T) {
	s := New(t,
		ToolCalls(Call{ID: "call_x", Name: "bash", Arguments: `{"command":"ls"}`}, Call{Name: "read", Arguments: `{"path":"a"}`}).
			WithUsage(1200, 40, 1024),
		Text("bye").WithoutUsage().WithModel("m-2025").WithHeader("X-Request-Id", "r1"),
		ToolCall("write", `{"path":"a.go","content":"pack`).WithFinishReason("length"),
	)
	type wire struct {
		ID      string `json:"id"`
		Object  string `json:"object"`
		Created int64  `json:"created"`
		Model   string `json:"model"`
		Choices []struct {
			FinishReason string `json:"finish_reason"`
			Message      struct {
				Role      string  `json:"role"`
				Content   *string `json:"content"`
				ToolCalls []struct {
					ID       string `json:"id"`
					Type     string `json:"type"`
					Function struct {
						Name      string `json:"name"`
						Arguments string `json:"arguments"`
					} `json:"function"`
				} `json:"tool_calls"`
			} `json:"message"`
		} `json:"choices"`
		Usage *struct {
			PromptTokens        int64 `json:"prompt_tokens"`
			CompletionTokens    int64 `json:"completion_tokens"`
			TotalTokens         int64 `json:"total_tokens"`
			PromptTokensDetails struct {
				CachedTokens int64 `json:"cached_tokens"`
			} `json:"prompt_tokens_details"`
		} `json:"usage"`
	}
	decode := func(b []byte) wire {
		t.Helper()
		var w wire
		if err := json.Unmarshal(b, &w); err != nil {
			t.Fatalf("decode reply %s: %v", b, err)
		}
		if len(w.Choices) != 1 {
			t.Fatalf("reply has %d choices, want 1", len(w.Choices))
		}
		return w
	}
	const req = `{"model":"gpt-x","messages":[{"role":"user","content":"u"}]}`

	_, _, b := post(t, s.URL(), req)
	w := decode(b)
	msg := w.Choices[0].Message
	if w.Object != "chat.completion" || w.Model != "gpt-x" || !strings.HasPrefix(w.ID, "chatcmpl-") || w.Created == 0 {
		t.Errorf("envelope = %+v, want object chat.completion, model gpt-x, a chatcmpl id and created", w)
	}
	if msg.Role != "assistant" || msg.Content != nil || w.Choices[0].FinishReason != "tool_calls" {
		t.Errorf("message role %q content %v finish %q, want assistant, null, tool_calls", msg.Role, msg.Content, w.Choices[0].FinishReason)
	}
	if len(msg.ToolCalls) != 2 {
		t.Fatalf("got %d tool calls, want 2", len(msg.ToolCalls))
	}
	first, second := msg.ToolCalls[0], msg.ToolCalls[1]
	if first.ID != "call_x" || first.Type != "function" || first.Function.Name != "bash" || first.Function.Arguments != `{"command":"ls"}` {
		t.Errorf("first call = %+v, want call_x function bash with its arguments", first)
	}
	if second.ID == "" || second.ID == first.ID || second.Function.Name != "read" {
		t.Errorf("second call = %+v, want a fresh generated id and name read", second)
	}
	if u := w.Usage; u == nil || u.PromptTokens != 1200 || u.CompletionTokens != 40 || u.TotalTokens != 1240 || u.PromptTokensDetails.CachedTokens != 1024 {
		t.Errorf("usage = %+v, want 1200/40/1240 cached 1024", w.Usage)
	}

	_, h, b := post(t, s.URL(), req)
	w = decode(b)
	if w.Usage != nil || strings.Contains(string(b), `"usage"`) {
		t.Errorf("reply %s has usage, want the field left out", b)
	}
	if w.Model != "m-2025" || h.Get("X-Request-Id") != "r1" || *w.Choices[0].Message.Content != "bye" {
		t.Errorf("reply model %q header %q content %q, want m-2025, r1, bye", w.Model, h.Get("X-Request-Id"), *w.Choices[0].Message.Content)
	}

	_, _, b = post(t, s.URL(), req)
	w = decode(b)
	if got := w.Choices[0]; got.FinishReason != "length" || got.Message.ToolCalls[0].Function.Arguments != `{"path":"a.go","content":"pack` {
		t.Errorf("cut-off reply = %+v, want finish length and the truncated arguments", got)
	}
}

func TestFaults(t *testing.T) {
	s := New(t,
		RateLimited("3"),
		Garbage("<html>"),
		Func(func(r Request) Turn { return Text(fmt.Sprintf("%d messages", len(r.Messages))) }),
		Reset(),
		Hang(),
	)
	const req = `{"model":"m","messages":[{"role":"system","content":"s"},{"role":"user","content":"u"}]}`

	status, h, body := post(t, s.URL(), req)
	if status != http.StatusTooManyRequests || h.Get("Retry-After") != "3" || !strings.Contains(string(body), `"code":"rate_limit_exceeded"`) {
		t.Errorf("rate limit = %d %q %s, want 429, Retry-After 3, rate_limit_exceeded", status, h.Get("Retry-After"), body)
	}
	if status, _, body := post(t, s.URL(), req); status != http.StatusOK || string(body) != "<html>" {
		t.Errorf("garbage = %d %s, want 200 <html>", status, body)
	}
	if _, _, body := post(t, s.URL(), req); !strings.Contains(string(body), `"content":"2 messages"`) {
		t.Errorf("func reply = %s, want content from the request", body)
	}
	if res, err := http.Post(s.URL()+"/chat/completions", "application/json", strings.NewReader(req)); err == nil {
		res.Body.Close()
		t.Errorf("reset turn answered %d, want a connection error", res.StatusCode)
	}

	ctx, cancel := context.WithTimeout(context.Background(), 100*time.Millisecond)
	defer cancel()
	hreq, _ := http.NewRequestWithContext(ctx, http.MethodPost, s.URL()+"/chat/completions", strings.NewReader(req))
	if res, err := http.DefaultClient.Do(hreq); err == nil {
		res.Body.Close()
		t.Errorf("hang turn answered %d, want the client to give up", res.StatusCode)
	} else if !errors.Is(err, context.DeadlineExceeded) {
		t.Errorf("hang turn error = %v, want deadline exceeded", err)
	}
	if n := len(s.Requests()); n != 5 {
		t.Errorf("recorded %d requests, want 5", n)
	}
}

// The faults of a 200 answer whose body is not a completion: a proxy's
// HTML page, a body cut short, an empty body.
func TestBadSuccessBodies(t *testing.T) {
	s := New(t,
		HTML(http.StatusOK, "<html><title>Bad Gateway</title></html>"),
		Text("hello").CutAfter(20),
		Garbage(""),
		Garbage(`{"object":"list"}`).CutAfter(100),
	)
	const req = `{"model":"m","messages":[{"role":"user","content":"u"}]}`

	status, h, body := post(t, s.URL(), req)
	if status != http.StatusOK || h.Get("Content-Type") != "text/html; charset=utf-8" || !strings.Contains(string(body), "Bad Gateway") {
		t.Errorf("HTML page = %d %q %s, want 200 text/html with the page", status, h.Get("Content-Type"), body)
	}

	res, err := http.Post(s.URL()+"/chat/completions", "application/json", strings.NewReader(req))
	if err != nil {
		t.Fatal(err)
	}
	got, err := io.ReadAll(res.Body)
	res.Body.Close()
	if res.StatusCode != http.StatusOK || !errors.Is(err, io.ErrUnexpectedEOF) || len(got) != 20 ||
		!strings.HasPrefix(string(got), `{"id":"chatcmpl-fake`) || res.ContentLength <= 20 {
		t.Errorf("cut reply = %d, %d of %d bytes %q, read error %v; want 200, 20 bytes of a longer body, unexpected EOF",
			res.StatusCode, len(got), res.ContentLength, got, err)
	}

	if status, _, body := post(t, s.URL(), req); status != http.StatusOK || len(body) != 0 {
		t.Errorf("empty body = %d %q, want 200 and nothing", status, body)
	}
	// A cut beyond the body's end sends it whole.
	if status, _, body := post(t, s.URL(), req); status != http.StatusOK || string(body) != `{"object":"list"}` {
		t.Errorf("cut beyond the end = %d %q, want the whole body", status, body)
	}
}

func TestRequestsRecordWhatWasSent(t *testing.T) {
	s := New(t, Text("ok"))
	post(t, s.URL(), `{"model":"m","max_completion_tokens":256,"temperature":0.5,`+tools+`,"messages":[{"role":"user","content":"u"}]}`)

	reqs := s.Requests()
	if len(reqs) != 1 {
		t.Fatalf("recorded %d requests, want 1", len(reqs))
	}
	r := reqs[0]
	if r.MaxCompletionTokens == nil || *r.MaxCompletionTokens != 256 || r.MaxTokens != nil {
		t.Errorf("max_completion_tokens = %v, max_tokens = %v, want 256 and absent", r.MaxCompletionTokens, r.MaxTokens)
	}
	if r.Temperature == nil || *r.Temperature != 0.5 {
		t.Errorf("temperature = %v, want 0.5", r.Temperature)
	}
	if got := r.ToolNames(); len(got) != 1 || got[0] != "bash" {
		t.Errorf("tool names = %q, want [bash]", got)
	}
	if r.Path != "/v1/chat/completions" || r.Header.Get("Content-Type") != "application/json" {
		t.Errorf("path %q content type %q, want /v1/chat/completions and application/json", r.Path, r.Header.Get("Content-Type"))
	}
}
