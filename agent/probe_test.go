package agent

import (
	"context"
	"errors"
	"net/http"
	"strings"
	"testing"

	"github.com/runner-dev/runner/internal/fakellm"
)

// Probe sorts what GET /models answers into "answers", "refuses the key"
// and "does not answer", in one request, with no key in its errors.
func TestProbe(t *testing.T) {
	tests := []struct {
		name    string
		setup   func(*fakellm.Server)
		want    error // nil, ErrAuth or ErrUnreachable
		wantMsg string
	}{
		{name: "model list", setup: func(*fakellm.Server) {}},
		{name: "no model list (404)", setup: func(s *fakellm.Server) {
			s.Models(fakellm.Status(http.StatusNotFound, `{"error":"not found"}`))
		}},
		{name: "method not allowed (405)", setup: func(s *fakellm.Server) {
			s.Models(fakellm.Status(http.StatusMethodNotAllowed, ``))
		}},
		{name: "busy (429)", setup: func(s *fakellm.Server) { s.Models(fakellm.RateLimited("1")) }},
		{name: "server error (500)", setup: func(s *fakellm.Server) { s.Models(fakellm.ServerError(500)) }},
		{name: "key refused (401)", setup: func(s *fakellm.Server) { s.RequireKey("sk-another-key-123456") },
			want: ErrAuth, wantMsg: "401 Unauthorized (invalid_api_key)"},
		{name: "forbidden (403)", setup: func(s *fakellm.Server) {
			s.Models(fakellm.APIError(http.StatusForbidden, "invalid_request_error", "", "Key "+canaryKey+" may not list models"))
		}, want: ErrAuth, wantMsg: "403 Forbidden"},
		{name: "gateway down (502)", setup: func(s *fakellm.Server) { s.Models(fakellm.ServerError(502)) },
			want: ErrUnreachable, wantMsg: "does not answer: 502 Bad Gateway"},
		{name: "unavailable (503)", setup: func(s *fakellm.Server) { s.Models(fakellm.ServerError(503)) },
			want: ErrUnreachable, wantMsg: "503 Service Unavailable"},
		{name: "down", setup: func(s *fakellm.Server) { s.Down() },
			want: ErrUnreachable, wantMsg: "connection refused"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			llm := fakellm.New(t)
			tt.setup(llm)
			m, _ := newModel(t, llm, nil)
			err := m.Probe(context.Background())
			switch {
			case tt.want == nil && err != nil:
				t.Fatalf("Probe = %v, want nil", err)
			case tt.want != nil && !errors.Is(err, tt.want):
				t.Fatalf("Probe = %v, want %v", err, tt.want)
			case err != nil && !strings.Contains(err.Error(), tt.wantMsg):
				t.Errorf("Probe = %q, want it to contain %q", err, tt.wantMsg)
			case err != nil && (strings.Contains(err.Error(), canaryKey) || strings.Contains(err.Error(), "http://")):
				t.Errorf("Probe = %q shows the key or the URL", err)
			}
			if n := len(llm.Requests()); n != 0 {
				t.Errorf("%d chat requests, want none", n)
			}
		})
	}
}

func TestEndpointNameAndLoopback(t *testing.T) {
	for _, tt := range []struct {
		base, name string
		loopback   bool
	}{
		{"", "https://api.openai.com/v1", false},
		{"https://user:secret@proxy.example.com/v1/?api-key=abc#x", "https://proxy.example.com/v1", false},
		{"http://localhost:11434/v1", "http://localhost:11434/v1", true},
		{"http://127.0.0.2:8000/v1", "http://127.0.0.2:8000/v1", true},
		{"http://[::1]:8000/v1", "http://[::1]:8000/v1", true},
		{"http://vllm.localhost/v1", "http://vllm.localhost/v1", true},
		{"http://10.0.0.5:8000/v1", "http://10.0.0.5:8000/v1", false},
		{"http://localhost.example.com/v1", "http://localhost.example.com/v1", false},
	} {
		if got := EndpointName(tt.base); got != tt.name {
			t.Errorf("EndpointName(%q) = %q, want %q", tt.base, got, tt.name)
		}
		if got := IsLoopback(tt.base); got != tt.loopback {
			t.Errorf("IsLoopback(%q) = %v, want %v", tt.base, got, tt.loopback)
		}
	}
}
