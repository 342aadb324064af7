package agent

import (
	"errors"
	"strings"
	"testing"
)

func TestRefusalKind(t *testing.T) {
	tests := []struct {
		name string
		e    ModelError
		want error
	}{
		{"401", ModelError{StatusCode: 401, Code: "invalid_api_key"}, ErrAuth},
		{"403", ModelError{StatusCode: 403}, ErrAuth},
		{"429 insufficient_quota code", ModelError{StatusCode: 429, Code: "insufficient_quota"}, ErrQuota},
		{"429 insufficient_quota type", ModelError{StatusCode: 429, Type: "insufficient_quota"}, ErrQuota},
		{"429 quota told in the message", ModelError{StatusCode: 429, Message: "You exceeded your current quota, please check your plan"}, ErrQuota},
		{"402", ModelError{StatusCode: 402}, ErrQuota},
		{"429 rate limit", ModelError{StatusCode: 429, Code: "rate_limit_exceeded"}, nil},
		{"400 context code", ModelError{StatusCode: 400, Code: "context_length_exceeded"}, ErrContextLength},
		{"400 context message", ModelError{StatusCode: 400, Message: "This model's Maximum Context Length is 8192 tokens"}, ErrContextLength},
		{"413 context window", ModelError{StatusCode: 413, Message: "prompt exceeds the context window"}, ErrContextLength},
		{"400 other", ModelError{StatusCode: 400, Code: "invalid_value", Message: "bad temperature"}, nil},
		{"500 mentioning context length", ModelError{StatusCode: 500, Message: "context length bookkeeping failed"}, nil},
		{"503", ModelError{StatusCode: 503}, nil},
	}
	for _, tt := range tests {
		if got := refusalKind(&tt.e); got != tt.want {
			t.Errorf("%s: refusalKind() = %v, want %v", tt.name, got, tt.want)
		}
	}
}

func TestModelErrorTextAndUnwrap(t *testing.T) {
	tests := []struct {
		e    ModelError
		want string
	}{
		{ModelError{StatusCode: 429, Code: "rate_limit_exceeded", Message: "slow down"}, "model API: 429 Too Many Requests (rate_limit_exceeded): slow down"},
		{ModelError{StatusCode: 500, Type: "server_error"}, "model API: 500 Internal Server Error (server_error)"},
		{ModelError{StatusCode: 599, Message: "odd"}, "model API: 599: odd"},
	}
	for _, tt := range tests {
		if got := tt.e.Error(); got != tt.want {
			t.Errorf("Error() = %q, want %q", got, tt.want)
		}
	}
	e := &ModelError{StatusCode: 401, kind: ErrAuth}
	if !errors.Is(e, ErrAuth) || errors.Is(e, ErrQuota) {
		t.Errorf("errors.Is on a 401 refusal: ErrAuth %v, ErrQuota %v, want true, false", errors.Is(e, ErrAuth), errors.Is(e, ErrQuota))
	}
}

func TestParseErrorBody(t *testing.T) {
	tests := []struct {
		name              string
		body              string
		wantMsg, wantType string
		wantCode          string
	}{
		{"openai envelope", `{"error":{"message":"m","type":"t","param":null,"code":"c"}}`, "m", "t", "c"},
		{"null code", `{"error":{"message":"m","type":"t","code":null}}`, "m", "t", ""},
		{"numeric code", `{"error":{"message":"m","code":402}}`, "m", "", "402"},
		{"error string", `{"error":"model overloaded"}`, "model overloaded", "", ""},
		{"top-level message", `{"message":"no such route"}`, "no such route", "", ""},
		{"detail", `{"detail":"Not Found"}`, "Not Found", "", ""},
		{"html", "<html>\n  <h1>502</h1>\n</html>", "<html> <h1>502</h1> </html>", "", ""},
		{"empty", "", "", "", ""},
	}
	for _, tt := range tests {
		got := parseErrorBody([]byte(tt.body))
		if got.Message != tt.wantMsg || got.Type != tt.wantType || got.Code != tt.wantCode {
			t.Errorf("%s: parseErrorBody() = (%q, %q, %q), want (%q, %q, %q)",
				tt.name, got.Message, got.Type, got.Code, tt.wantMsg, tt.wantType, tt.wantCode)
		}
	}
	long := parseErrorBody([]byte(strings.Repeat("x", 5000)))
	if len(long.Message) > 210 || !strings.HasSuffix(long.Message, "…") {
		t.Errorf("long body message has %d bytes, want it cut near 200 with an ellipsis", len(long.Message))
	}
}
