// Package fakellm is a scripted OpenAI Chat Completions server for tests.
//
// A test lists the turns the "model" will play, in order, and points its
// client at URL(). The server answers each request with the next turn, in
// the real JSON wire format, records every request, and fails the test when
// a request is malformed (see Validate), when more requests arrive than
// turns were scripted, or when scripted turns are never used. A malformed
// request is answered 400, as a real server would, without using a turn.
// GET /models answers a model list, as OpenAI-compatible servers do; the
// controls in control.go make the server go down and come back, throttle,
// refuse a key, and count the requests in flight.
//
// A Mode adds one provider's rules (DeepSeek's reasoning_content, Gemini's
// thought signatures, Mistral's and Groq's strict schemas...) and answers a
// request that breaks them as that provider does; Recordings replays
// replies recorded from real services (recordings/README.md lists them).
//
//	llm := fakellm.New(t,
//		fakellm.ToolCall("bash", `{"command":"go test ./..."}`),
//		fakellm.RateLimited("2"),
//		fakellm.Text("done").WithUsage(1200, 40, 1024),
//	)
//	// OPENAI_BASE_URL=llm.URL()
package fakellm

import (
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// Server is a running fake. Its methods are safe for concurrent use.
type Server struct {
	t       testing.TB
	srv     *httptest.Server
	closing chan struct{}

	ln *listener

	mu       sync.Mutex
	turns    []Turn
	next     int
	repeat   *Turn
	requests []Request
	reported bool

	// Set by the controls of control.go.
	models       *Turn
	modelLists   int
	key          string
	disrupt      *Turn
	disruptEvery int
	disruptSeen  int
	disrupted    int
	epoch        int
	inFlight     int
	peak         int

	mode     Mode
	modes    map[string]Mode
	refusals []Refusal
	issued   issued
}

// New starts a server on 127.0.0.1 that plays turns in order. It is shut
// down, and Verify is run, when the test ends.
func New(t testing.TB, turns ...Turn) *Server {
	t.Helper()
	s := &Server{t: t, turns: append([]Turn(nil), turns...), closing: make(chan struct{})}
	mux := http.NewServeMux()
	mux.HandleFunc("POST /v1/chat/completions", s.serve)
	mux.HandleFunc("POST /chat/completions", s.serve)
	mux.HandleFunc("GET /v1/models", s.serveModels)
	mux.HandleFunc("GET /models", s.serveModels)
	mux.HandleFunc("/", func(w http.ResponseWriter, r *http.Request) {
		s.t.Errorf("fakellm: unexpected %s %s", r.Method, r.URL.Path)
		http.Error(w, "fakellm serves POST /v1/chat/completions and GET /v1/models only", http.StatusNotFound)
	})
	ln, err := newListener()
	if err != nil {
		t.Fatalf("fakellm: listen: %v", err)
	}
	s.ln = ln
	s.srv = httptest.NewUnstartedServer(mux)
	s.srv.Listener = ln
	s.srv.Start()
	t.Cleanup(func() {
		close(s.closing) // releases hung requests so Close can return
		s.srv.Close()
		s.Verify()
	})
	return s
}

// URL is the base URL to give a client, for example as OPENAI_BASE_URL:
// "http://127.0.0.1:<port>/v1". Requests without the /v1 prefix are served
// too.
func (s *Server) URL() string { return s.srv.URL + "/v1" }

// Add appends turns to the script.
func (s *Server) Add(turns ...Turn) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.turns = append(s.turns, turns...)
	s.reported = false
}

// Forever makes t the answer to every request after the script has run
// out, for a test that does not know how many calls the client will make
// (one that ends at a limit, say). It is never reported as unused.
func (s *Server) Forever(t Turn) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.repeat = &t
}

// Requests returns every request received so far, in arrival order,
// including malformed ones.
func (s *Server) Requests() []Request {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]Request(nil), s.requests...)
}

// Verify fails the test if some scripted turns were never played. It runs
// by itself when the test ends; calling it earlier is allowed.
func (s *Server) Verify() {
	s.t.Helper()
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.next < len(s.turns) && !s.reported {
		s.reported = true
		s.t.Errorf("fakellm: %d of %d scripted turns never used; the first is #%d: %s",
			len(s.turns)-s.next, len(s.turns), s.next+1, s.turns[s.next])
	}
}

func (s *Server) serve(w http.ResponseWriter, r *http.Request) {
	disruption, refused, leave := s.arrive(r)
	defer leave()
	body, err := io.ReadAll(r.Body)
	req := Request{Body: body, Header: r.Header.Clone(), Path: r.URL.Path}
	if err == nil {
		err = json.Unmarshal(body, &req)
	}
	s.mu.Lock()
	s.requests = append(s.requests, req)
	n := len(s.requests)
	s.mu.Unlock()

	if refused {
		s.play(w, r, req, Unauthorized())
		return
	}
	if err != nil {
		s.t.Errorf("fakellm: request %d: body is not a valid request: %v", n, err)
		writeJSON(w, http.StatusBadRequest, nil, errorBody("invalid_request_error", "", "invalid JSON body"))
		return
	}
	mode := s.modeOf(req.Model)
	problems := validate(req, mode)
	if req.Stream {
		problems = append(problems, fmt.Errorf("stream is set; fakellm answers non-streaming requests only"))
	}
	if len(problems) > 0 {
		texts := make([]string, len(problems))
		for i, p := range problems {
			texts[i] = p.Error()
			s.t.Errorf("fakellm: request %d: %v", n, p)
		}
		writeJSON(w, http.StatusBadRequest, nil,
			errorBody("invalid_request_error", "", strings.Join(texts, "; ")))
		return
	}

	if disruption != nil {
		s.play(w, r, req, *disruption)
		return
	}
	if r := s.issued.check(mode, req); r != nil {
		s.mu.Lock()
		s.refusals = append(s.refusals, Refusal{Request: n, Mode: mode, Status: r.status, Body: r.body})
		s.mu.Unlock()
		writeJSON(w, r.status, nil, r.body)
		return
	}

	turn, ok := s.take()
	if !ok {
		s.t.Errorf("fakellm: request %d arrived but the script has only %d turns (last message: %s)",
			n, n-1, lastMessage(req))
		writeJSON(w, http.StatusInternalServerError, nil,
			errorBody("server_error", "", "fakellm: script exhausted"))
		return
	}
	for depth := 0; turn.kind == kindFunc; depth++ {
		if depth == 10 {
			s.t.Errorf("fakellm: request %d: Func turns nest more than 10 deep", n)
			writeJSON(w, http.StatusInternalServerError, nil, errorBody("server_error", "", "fakellm: Func loop"))
			return
		}
		turn = turn.fn(req)
	}
	s.play(w, r, req, turn)
}

// take returns the next scripted turn.
func (s *Server) take() (Turn, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.next >= len(s.turns) {
		if s.repeat != nil {
			return *s.repeat, true
		}
		return Turn{}, false
	}
	t := s.turns[s.next]
	s.next++
	return t, true
}

func (s *Server) play(w http.ResponseWriter, r *http.Request, req Request, t Turn) {
	if t.delay > 0 {
		timer := time.NewTimer(t.delay)
		defer timer.Stop()
		select {
		case <-timer.C:
		case <-r.Context().Done():
			return
		case <-s.closing:
			return
		}
	}
	switch t.kind {
	case kindReply:
		c, err := reply(req, t)
		if err != nil {
			s.t.Errorf("fakellm: %v", err)
			writeJSON(w, http.StatusInternalServerError, nil, errorBody("server_error", "", err.Error()))
			return
		}
		b, err := json.Marshal(c)
		if err != nil {
			s.t.Errorf("fakellm: encode reply: %v", err)
			return
		}
		s.issued.note(b)
		answer(w, t, http.StatusOK, string(b))
	case kindRecorded:
		s.issued.note([]byte(t.body))
		answer(w, t, http.StatusOK, t.body)
	case kindStatus:
		answer(w, t, t.status, t.body)
	case kindGarbage:
		answer(w, t, http.StatusOK, t.body)
	case kindHang:
		s.hold(r)
	case kindStall:
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusOK)
		_, _ = io.WriteString(w, `{"id":"chatcmpl-stalled","object":"chat.completion","choices":[`)
		http.NewResponseController(w).Flush()
		s.hold(r)
	case kindReset:
		s.reset(w)
	}
}

// hold blocks until the client goes away or the test ends.
func (s *Server) hold(r *http.Request) {
	select {
	case <-r.Context().Done():
	case <-s.closing:
	}
}

// reset closes the connection with a TCP RST instead of a clean FIN.
func (s *Server) reset(w http.ResponseWriter) {
	conn, _, err := http.NewResponseController(w).Hijack()
	if err != nil {
		s.t.Errorf("fakellm: hijack connection for reset: %v", err)
		return
	}
	if tcp, ok := conn.(*net.TCPConn); ok {
		_ = tcp.SetLinger(0)
	}
	_ = conn.Close()
}

// answer writes the turn's status, headers and body, or, for a turn cut
// short, the start of the body under a Content-Length announcing all of it;
// the server then closes the connection, as the handler wrote less than it
// announced.
func answer(w http.ResponseWriter, t Turn, status int, body string) {
	if t.cut {
		w.Header().Set("Content-Length", strconv.Itoa(len(body)))
		body = body[:min(t.cutAt, len(body))]
	}
	writeJSON(w, status, t.header, body)
}

func writeJSON(w http.ResponseWriter, status int, header http.Header, body string) {
	for k, vs := range header {
		for _, v := range vs {
			w.Header().Add(k, v)
		}
	}
	if w.Header().Get("Content-Type") == "" {
		w.Header().Set("Content-Type", "application/json")
	}
	w.WriteHeader(status)
	_, _ = io.WriteString(w, body)
}

var sequence atomic.Int64

// reply builds the completion body for a reply turn.
func reply(req Request, t Turn) (completion, error) {
	msg := replyMessage{Role: "assistant", Content: t.content}
	replyBytes := 0
	if t.content != nil {
		replyBytes += len(*t.content)
	}
	for _, c := range t.calls {
		if c.ID == "" {
			c.ID = fmt.Sprintf("call_fake%d", sequence.Add(1))
		}
		msg.ToolCalls = append(msg.ToolCalls, WireCall{
			ID: c.ID, Type: "function", Function: WireFunction{Name: c.Name, Arguments: c.Arguments},
		})
		replyBytes += len(c.Name) + len(c.Arguments)
	}
	finish := t.finish
	if finish == "" {
		finish = "stop"
		if len(t.calls) > 0 {
			finish = "tool_calls"
		}
	}
	model := t.model
	if model == "" {
		model = req.Model
	}
	c := completion{
		ID:                fmt.Sprintf("chatcmpl-fake%d", sequence.Add(1)),
		Object:            "chat.completion",
		Created:           time.Now().Unix(),
		Model:             model,
		Choices:           []choice{{Index: 0, Message: msg, Logprobs: json.RawMessage("null"), FinishReason: finish}},
		SystemFingerprint: "fp_fakellm",
	}
	if !t.noUsage {
		u := Usage{PromptTokens: (int64(len(req.Body)) + 3) / 4, CompletionTokens: (int64(replyBytes) + 3) / 4}
		if t.usage != nil {
			u = *t.usage
		}
		if t.tokenizer != "" {
			var err error
			if u.PromptTokens, err = PromptTokens(t.tokenizer, req); err != nil {
				return completion{}, err
			}
			if u.CompletionTokens, err = completionTokens(t.tokenizer, t.content, t.calls); err != nil {
				return completion{}, err
			}
		}
		c.Usage = &usage{
			PromptTokens:     u.PromptTokens,
			CompletionTokens: u.CompletionTokens,
			TotalTokens:      u.PromptTokens + u.CompletionTokens,
		}
		c.Usage.PromptTokensDetails.CachedTokens = u.CachedTokens
	}
	return c, nil
}

func lastMessage(req Request) string {
	if len(req.Messages) == 0 {
		return "none"
	}
	m := req.Messages[len(req.Messages)-1]
	return fmt.Sprintf("%s %q", m.Role, clip(m.Content))
}
