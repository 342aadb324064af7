package agent

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/runner-dev/runner/internal/fakellm"
)

// TestCompleteRetries drives the model through scripted faults and checks
// which are retried, how long it asked to wait, and what it finally returns.
func TestCompleteRetries(t *testing.T) {
	tests := []struct {
		name      string
		turns     []fakellm.Turn
		edit      func(*OpenAIConfig)
		wantWaits []time.Duration // one per retry
		wantErr   error           // nil: success with content "ok"
		wantText  string          // in the final error
		wantRetry string          // in every retried attempt's error
	}{
		{
			name:      "429 honours Retry-After",
			turns:     []fakellm.Turn{fakellm.RateLimited("7"), fakellm.Text("ok")},
			wantWaits: []time.Duration{7 * time.Second},
			wantRetry: "429",
		},
		{
			name:      "Retry-After capped by MaxRetryWait",
			turns:     []fakellm.Turn{fakellm.RateLimited("120"), fakellm.Text("ok")},
			wantWaits: []time.Duration{30 * time.Second},
		},
		{
			name: "Retry-After-Ms preferred",
			turns: []fakellm.Turn{
				fakellm.RateLimited("9").WithHeader("Retry-After-Ms", "250"), fakellm.Text("ok"),
			},
			wantWaits: []time.Duration{250 * time.Millisecond},
		},
		{
			name: "run of 5xx then success, exponential backoff",
			turns: []fakellm.Turn{
				fakellm.ServerError(500), fakellm.ServerError(502), fakellm.ServerError(503), fakellm.Text("ok"),
			},
			wantWaits: []time.Duration{time.Second, 2 * time.Second, 4 * time.Second},
		},
		{
			name: "408 and 409 retried",
			turns: []fakellm.Turn{
				fakellm.Status(http.StatusRequestTimeout, `{}`), fakellm.Status(http.StatusConflict, `{}`), fakellm.Text("ok"),
			},
			wantWaits: []time.Duration{time.Second, 2 * time.Second},
		},
		{
			name: "proxy HTML 502 retried",
			turns: []fakellm.Turn{
				fakellm.Status(http.StatusBadGateway, "<html><body>Bad Gateway</body></html>").WithHeader("Content-Type", "text/html"),
				fakellm.Text("ok"),
			},
			wantWaits: []time.Duration{time.Second},
			wantRetry: "Bad Gateway",
		},
		{
			name:      "connection reset retried",
			turns:     []fakellm.Turn{fakellm.Reset(), fakellm.Text("ok")},
			wantWaits: []time.Duration{time.Second},
		},
		{
			name:      "hung response retried after the attempt timeout",
			turns:     []fakellm.Turn{fakellm.Hang(), fakellm.Text("ok")},
			edit:      func(c *OpenAIConfig) { c.RequestTimeout = 200 * time.Millisecond },
			wantWaits: []time.Duration{time.Second},
			wantRetry: "attempt timed out after 200ms",
		},
		{
			name:      "body stalled mid-way retried after the attempt timeout",
			turns:     []fakellm.Turn{fakellm.Stall(), fakellm.Text("ok")},
			edit:      func(c *OpenAIConfig) { c.RequestTimeout = 200 * time.Millisecond },
			wantWaits: []time.Duration{time.Second},
			wantRetry: "attempt timed out",
		},
		{
			name:     "401 not retried",
			turns:    []fakellm.Turn{fakellm.Unauthorized()},
			wantErr:  ErrAuth,
			wantText: "401",
		},
		{
			name:     "403 not retried",
			turns:    []fakellm.Turn{fakellm.APIError(http.StatusForbidden, "invalid_request_error", "unsupported_country_region_territory", "Country not supported")},
			wantErr:  ErrAuth,
			wantText: "Country not supported",
		},
		{
			name:     "insufficient_quota not retried",
			turns:    []fakellm.Turn{fakellm.InsufficientQuota().WithHeader("Retry-After", "1")},
			wantErr:  ErrQuota,
			wantText: "insufficient_quota",
		},
		{
			name:     "402 from a credit-based server is quota",
			turns:    []fakellm.Turn{fakellm.Status(http.StatusPaymentRequired, `{"error":{"message":"Insufficient credits","code":402}}`)},
			wantErr:  ErrQuota,
			wantText: "Insufficient credits",
		},
		{
			name:     "context_length_exceeded",
			turns:    []fakellm.Turn{fakellm.ContextLengthExceeded()},
			wantErr:  ErrContextLength,
			wantText: "maximum context length",
		},
		{
			name:     "context length told only in the message",
			turns:    []fakellm.Turn{fakellm.APIError(400, "invalid_request_error", "", "This model's maximum context length is 8192 tokens")},
			wantErr:  ErrContextLength,
			wantText: "8192",
		},
		{
			name:      "200 with a proxy's HTML page retried",
			turns:     []fakellm.Turn{fakellm.HTML(http.StatusOK, "<html><title>502 Bad Gateway</title></html>"), fakellm.Text("ok")},
			wantWaits: []time.Duration{time.Second},
			wantRetry: "malformed response",
		},
		{
			name:      "200 with a body cut short retried",
			turns:     []fakellm.Turn{fakellm.Text("ok").CutAfter(40), fakellm.Text("ok")},
			wantWaits: []time.Duration{time.Second},
			wantRetry: "the body was cut short",
		},
		{
			name:      "200 with JSON that is not a completion retried",
			turns:     []fakellm.Turn{fakellm.Garbage(`{"object":"list","data":[]}`), fakellm.Text("ok")},
			wantWaits: []time.Duration{time.Second},
			wantRetry: "no choices",
		},
		{
			name: "200 with a choice without a message retried",
			turns: []fakellm.Turn{
				fakellm.Garbage(`{"id":"c","object":"chat.completion","choices":[{"index":0,"finish_reason":"stop"}]}`), fakellm.Text("ok"),
			},
			wantWaits: []time.Duration{time.Second},
			wantRetry: "no message in the first choice",
		},
		{
			name:      "200 with an empty body retried",
			turns:     []fakellm.Turn{fakellm.Garbage(""), fakellm.Text("ok")},
			wantWaits: []time.Duration{time.Second},
			wantRetry: "the body is empty",
		},
		{
			name: "a body that is never a completion gives up like a 5xx",
			turns: []fakellm.Turn{
				fakellm.Garbage("<!doctype html><title>Dashboard</title>"), fakellm.Garbage("<!doctype html><title>Dashboard</title>"),
				fakellm.Garbage("<!doctype html><title>Dashboard</title>"),
			},
			edit:      func(c *OpenAIConfig) { c.MaxRetries = 2 },
			wantWaits: []time.Duration{time.Second, 2 * time.Second},
			wantErr:   ErrBadResponse,
			wantText:  "giving up after 3 attempts: malformed response",
		},
		{
			name: "retries exhausted",
			turns: []fakellm.Turn{
				fakellm.ServerError(503), fakellm.ServerError(503), fakellm.ServerError(503),
			},
			edit:      func(c *OpenAIConfig) { c.MaxRetries = 2 },
			wantWaits: []time.Duration{time.Second, 2 * time.Second},
			wantText:  "giving up after 3 attempts: model API: 503 Service Unavailable",
		},
		{
			name:      "backoff capped by MaxRetryWait",
			turns:     []fakellm.Turn{fakellm.Reset(), fakellm.Reset(), fakellm.Reset(), fakellm.Text("ok")},
			edit:      func(c *OpenAIConfig) { c.MaxRetryWait = 3 * time.Second },
			wantWaits: []time.Duration{time.Second, 2 * time.Second, 3 * time.Second},
		},
		{
			name:     "no retries configured",
			turns:    []fakellm.Turn{fakellm.ServerError(500)},
			edit:     func(c *OpenAIConfig) { c.MaxRetries = 0 },
			wantText: "giving up after 1 attempt:",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			llm := fakellm.New(t, tt.turns...)
			m, log := newModel(t, llm, tt.edit)
			// A bound on the whole call, so that a broken attempt timeout
			// fails the case instead of hanging the run.
			ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
			defer cancel()

			got, err := m.Complete(ctx, userRequest("hi"))

			if tt.wantErr == nil && tt.wantText == "" {
				if err != nil {
					t.Fatalf("Complete: %v", err)
				}
				if got.Message.Content != "ok" {
					t.Errorf("content = %q, want ok", got.Message.Content)
				}
			} else {
				if err == nil {
					t.Fatalf("Complete succeeded, want an error")
				}
				if tt.wantErr != nil && !errors.Is(err, tt.wantErr) {
					t.Errorf("error = %v, want errors.Is %v", err, tt.wantErr)
				}
				if !strings.Contains(err.Error(), tt.wantText) {
					t.Errorf("error = %q, want it to contain %q", err, tt.wantText)
				}
			}
			if !slices.Equal(log.waits, tt.wantWaits) {
				t.Errorf("OnRetry waits = %v, want %v", log.waits, tt.wantWaits)
			}
			if !slices.Equal(log.slept, tt.wantWaits) {
				t.Errorf("slept = %v, want %v", log.slept, tt.wantWaits)
			}
			if want := len(tt.wantWaits) + 1; len(llm.Requests()) != want {
				t.Errorf("server saw %d requests, want %d", len(llm.Requests()), want)
			}
			for _, r := range log.retries {
				if !strings.Contains(r, tt.wantRetry) {
					t.Errorf("retried error %q, want it to contain %q", r, tt.wantRetry)
				}
			}
		})
	}
}

func TestCompleteModelErrorDetails(t *testing.T) {
	llm := fakellm.New(t, fakellm.APIError(http.StatusNotFound, "invalid_request_error", "model_not_found", "The model `gpt-9` does not exist"))
	m, log := newModel(t, llm, nil)

	_, err := m.Complete(context.Background(), userRequest("hi"))

	var me *ModelError
	if !errors.As(err, &me) {
		t.Fatalf("error = %v, want a *ModelError", err)
	}
	if me.StatusCode != 404 || me.Code != "model_not_found" || me.Type != "invalid_request_error" || !strings.Contains(me.Message, "gpt-9") {
		t.Errorf("ModelError = %+v, want 404 model_not_found with the message", me)
	}
	if errors.Is(err, ErrAuth) || errors.Is(err, ErrQuota) || errors.Is(err, ErrContextLength) || len(log.retries) != 0 {
		t.Errorf("404 classified as %v with %d retries, want no named error and no retry", me.kind, len(log.retries))
	}
}

func TestCompleteCallerCancelNotRetried(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	llm := fakellm.New(t, fakellm.Func(func(fakellm.Request) fakellm.Turn {
		cancel()
		return fakellm.Hang()
	}))
	m, log := newModel(t, llm, nil)

	_, err := m.Complete(ctx, userRequest("hi"))

	if !errors.Is(err, context.Canceled) || errors.Is(err, ErrAttemptTimeout) {
		t.Errorf("error = %v, want context.Canceled and not an attempt timeout", err)
	}
	if len(llm.Requests()) != 1 || len(log.retries) != 0 {
		t.Errorf("requests %d, retries %d, want 1 and 0", len(llm.Requests()), len(log.retries))
	}
}

func TestCompleteCallerDeadlineNotRetried(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 200*time.Millisecond)
	defer cancel()
	llm := fakellm.New(t, fakellm.Hang())
	m, log := newModel(t, llm, nil) // attempt timeout 5s: the caller's deadline comes first

	_, err := m.Complete(ctx, userRequest("hi"))

	if !errors.Is(err, context.DeadlineExceeded) || errors.Is(err, ErrAttemptTimeout) {
		t.Errorf("error = %v, want the caller's deadline, not an attempt timeout", err)
	}
	if len(log.retries) != 0 {
		t.Errorf("retries = %d, want 0", len(log.retries))
	}
}

func TestCompleteCancelDuringBackoff(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	llm := fakellm.New(t, fakellm.ServerError(503))
	m, _ := newModel(t, llm, func(c *OpenAIConfig) {
		c.OnRetry = func(int, error, time.Duration) { cancel() }
		c.Sleep = nil // the real timer, which must stop early
		c.MaxRetryWait = time.Hour
	})
	start := time.Now()

	_, err := m.Complete(ctx, userRequest("hi"))

	if !errors.Is(err, context.Canceled) || !strings.Contains(err.Error(), "503") {
		t.Errorf("error = %v, want context.Canceled naming the 503 being retried", err)
	}
	if elapsed := time.Since(start); elapsed > 5*time.Second {
		t.Errorf("Complete took %v, want it to stop waiting when cancelled", elapsed)
	}
}

func TestCompleteNeverLeaksAPIKey(t *testing.T) {
	echo := "Incorrect API key provided: " + canaryKey + "."
	tests := []struct {
		name  string
		turns []fakellm.Turn
	}{
		{"401 echoing the key", []fakellm.Turn{fakellm.APIError(401, "invalid_request_error", "invalid_api_key", echo)}},
		{"masked key", []fakellm.Turn{fakellm.APIError(401, "invalid_request_error", "invalid_api_key", "Incorrect API key provided: sk-canar****-123.")}},
		{"400 echoing the key", []fakellm.Turn{fakellm.Status(400, `{"error":"bad key `+canaryKey+`"}`)}},
		{"garbage echoing the key", []fakellm.Turn{
			fakellm.Garbage("auth=" + canaryKey), fakellm.Garbage("auth=" + canaryKey), fakellm.Garbage("auth=" + canaryKey),
		}},
		{"retried 500s echoing the key", []fakellm.Turn{
			fakellm.APIError(500, "server_error", "", echo), fakellm.APIError(500, "server_error", "", echo),
			fakellm.APIError(500, "server_error", "", echo),
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			llm := fakellm.New(t, tt.turns...)
			m, log := newModel(t, llm, func(c *OpenAIConfig) { c.MaxRetries = 2 })

			_, err := m.Complete(context.Background(), userRequest("hi"))

			if err == nil {
				t.Fatal("Complete succeeded, want an error")
			}
			texts := append([]string{err.Error(), fmt.Sprintf("%+v", err)}, log.retries...)
			var me *ModelError
			if errors.As(err, &me) {
				texts = append(texts, me.Message)
			}
			for _, text := range texts {
				if strings.Contains(text, canaryKey) || strings.Contains(text, "sk-canar") {
					t.Errorf("error text %q contains the API key", text)
				}
			}
		})
	}
}

func TestRetryAfter(t *testing.T) {
	now := time.Date(2026, 5, 1, 12, 0, 0, 0, time.UTC)
	tests := []struct {
		name    string
		header  map[string]string
		want    time.Duration
		wantHas bool
	}{
		{"none", nil, 0, false},
		{"seconds", map[string]string{"Retry-After": "7"}, 7 * time.Second, true},
		{"fractional seconds", map[string]string{"Retry-After": "1.5"}, 1500 * time.Millisecond, true},
		{"zero", map[string]string{"Retry-After": "0"}, 0, true},
		{"milliseconds preferred", map[string]string{"Retry-After": "9", "Retry-After-Ms": "250"}, 250 * time.Millisecond, true},
		{"bad milliseconds fall back", map[string]string{"Retry-After": "2", "Retry-After-Ms": "soon"}, 2 * time.Second, true},
		{"HTTP date", map[string]string{"Retry-After": now.Add(90 * time.Second).Format(http.TimeFormat)}, 90 * time.Second, true},
		{"HTTP date in the past", map[string]string{"Retry-After": now.Add(-time.Hour).Format(http.TimeFormat)}, 0, true},
		{"negative", map[string]string{"Retry-After": "-3"}, 0, false},
		{"nonsense", map[string]string{"Retry-After": "later"}, 0, false},
	}
	for _, tt := range tests {
		h := http.Header{}
		for k, v := range tt.header {
			h.Set(k, v)
		}
		got, has := retryAfter(h, now)
		if got != tt.want || has != tt.wantHas {
			t.Errorf("%s: retryAfter() = (%v, %v), want (%v, %v)", tt.name, got, has, tt.want, tt.wantHas)
		}
	}
}

func TestRetryable(t *testing.T) {
	status := func(code int) error { return &ModelError{StatusCode: code} }
	tests := []struct {
		name string
		err  error
		want bool
	}{
		{"attempt timeout", fmt.Errorf("x: %w", ErrAttemptTimeout), true},
		{"url error", &url.Error{Op: "Post", URL: "http://x", Err: errors.New("dial")}, true},
		{"reset", fmt.Errorf("read: %w", syscall.ECONNRESET), true},
		{"unexpected EOF", io.ErrUnexpectedEOF, true},
		{"408", status(408), true},
		{"409", status(409), true},
		{"429", status(429), true},
		{"500", status(500), true},
		{"529", status(529), true},
		{"400", status(400), false},
		{"404", status(404), false},
		{"429 quota", &ModelError{StatusCode: 429, kind: ErrQuota}, false},
		{"401", &ModelError{StatusCode: 401, kind: ErrAuth}, false},
		{"context length", &ModelError{StatusCode: 400, kind: ErrContextLength}, false},
		{"bad response", fmt.Errorf("%w: junk", ErrBadResponse), true},
		{"setup error", errors.New("requestconfig: base url is not set"), false},
		{"untrusted certificate", &url.Error{Op: "Post", URL: "https://x", Err: &tls.CertificateVerificationError{Err: x509.UnknownAuthorityError{}}}, false},
	}
	for _, tt := range tests {
		if got := retryable(tt.err); got != tt.want {
			t.Errorf("%s: retryable(%v) = %v, want %v", tt.name, tt.err, got, tt.want)
		}
	}
}

func TestWaitBackoff(t *testing.T) {
	p := retryPolicy{maxWait: 10 * time.Second, firstWait: time.Second, jitter: func(d time.Duration) time.Duration { return d }}
	tests := []struct {
		attempt int
		err     error
		want    time.Duration
	}{
		{1, io.EOF, time.Second},
		{2, io.EOF, 2 * time.Second},
		{4, io.EOF, 8 * time.Second},
		{5, io.EOF, 10 * time.Second},
		{200, io.EOF, 10 * time.Second},
		{1, &ModelError{StatusCode: 429, RetryAfter: 3 * time.Second, HasRetryAfter: true}, 3 * time.Second},
		{1, &ModelError{StatusCode: 429, RetryAfter: time.Minute, HasRetryAfter: true}, 10 * time.Second},
		{3, &ModelError{StatusCode: 429, HasRetryAfter: true}, 0},
	}
	for _, tt := range tests {
		if got := p.wait(tt.attempt, tt.err); got != tt.want {
			t.Errorf("wait(%d, %v) = %v, want %v", tt.attempt, tt.err, got, tt.want)
		}
	}
}

func TestEqualJitterBounds(t *testing.T) {
	for _, d := range []time.Duration{0, 1, 2, 3, time.Second, time.Minute} {
		for range 200 {
			if got := equalJitter(d); got < d/2 || got > d {
				t.Fatalf("equalJitter(%v) = %v, want within [%v, %v]", d, got, d/2, d)
			}
		}
	}
}

func TestSleepContext(t *testing.T) {
	if err := sleepContext(context.Background(), time.Millisecond); err != nil {
		t.Errorf("sleepContext(1ms) = %v, want nil", err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	start := time.Now()
	if err := sleepContext(ctx, time.Hour); !errors.Is(err, context.Canceled) {
		t.Errorf("sleepContext(cancelled, 1h) = %v, want context.Canceled", err)
	}
	if time.Since(start) > time.Second {
		t.Errorf("sleepContext on a cancelled context waited %v", time.Since(start))
	}
}
