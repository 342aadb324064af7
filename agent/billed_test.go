package agent

import (
	"bytes"
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"io"
	"net"
	"net/url"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/runner-dev/runner/budget"
	"github.com/runner-dev/runner/internal/fakellm"
)

func TestMayHaveBeenBilled(t *testing.T) {
	status := func(code int) error { return fmt.Errorf("chat completion: %w", &ModelError{StatusCode: code}) }
	dial := &url.Error{Op: "Post", URL: "http://x", Err: &net.OpError{Op: "dial", Net: "tcp", Err: syscall.ECONNREFUSED}}
	tests := []struct {
		name string
		err  error
		want bool
	}{
		{"400 invalid request", status(400), false},
		{"401", status(401), false},
		{"403", status(403), false},
		{"404 unknown model", status(404), false},
		{"409", status(409), false},
		{"429 rate limit", status(429), false},
		{"429 quota", &ModelError{StatusCode: 429, kind: ErrQuota}, false},
		{"408", status(408), true},
		{"500", status(500), true},
		{"502 from a gateway", status(502), true},
		{"504 gateway timeout", status(504), true},
		{"connection refused", dial, false},
		{"refused, retries exhausted", fmt.Errorf("giving up after 7 attempts: %w", dial), false},
		{"unknown host", &url.Error{Op: "Post", URL: "http://x", Err: &net.OpError{Op: "dial", Err: &net.DNSError{Err: "no such host"}}}, false},
		{"untrusted certificate", &url.Error{Op: "Post", URL: "https://x", Err: &tls.CertificateVerificationError{Err: x509.UnknownAuthorityError{}}}, false},
		{"not an HTTPS server", &url.Error{Op: "Post", URL: "https://x", Err: tls.RecordHeaderError{Msg: "first record does not look like a TLS handshake"}}, false},
		{"request not built", notSent{errors.New("request names no model")}, false},
		{"reset after sending", &url.Error{Op: "Post", URL: "http://x", Err: &net.OpError{Op: "read", Err: syscall.ECONNRESET}}, true},
		{"connection closed before the reply", &url.Error{Op: "Post", URL: "http://x", Err: io.EOF}, true},
		{"attempt timeout", fmt.Errorf("%w after 5m0s", ErrAttemptTimeout), true},
		{"caller gave up mid-attempt", &url.Error{Op: "Post", URL: "http://x", Err: context.Canceled}, true},
		{"body cut short", fmt.Errorf("%w: the body was cut short: %w", ErrBadResponse, io.ErrUnexpectedEOF), true},
		{"proxy page", fmt.Errorf("%w: invalid character '<'", ErrBadResponse), true},
		{"unknown failure", errors.New("something else"), true},
	}
	for _, tt := range tests {
		if got := mayHaveBeenBilled(tt.err); got != tt.want {
			t.Errorf("%s: mayHaveBeenBilled(%v) = %v, want %v", tt.name, tt.err, got, tt.want)
		}
	}
}

// billingAgent is an agent on the real OpenAI client with an attempt
// timeout of timeout and up to retries retries that do not wait.
func billingAgent(t *testing.T, baseURL string, meter *budget.Meter, timeout time.Duration, retries int) (*Agent, *bytes.Buffer) {
	t.Helper()
	m, err := NewOpenAI(OpenAIConfig{BaseURL: baseURL, APIKey: testKey, MaxRetries: retries, RequestTimeout: timeout,
		Sleep: func(ctx context.Context, _ time.Duration) error { return ctx.Err() }})
	if err != nil {
		t.Fatal(err)
	}
	traj := &bytes.Buffer{}
	cfg := Config{Model: "gpt-4o-mini", Price: testPrice(t), Meter: meter, MaxCompletionTokens: 1000,
		Trajectory: NewTrajectory(traj, testKey)}
	return New(m, newMemSandbox(nil), Task{ID: "t1", Prompt: "Fix the typo in README.md."}, cfg), traj
}

// Every failed attempt that may have been billed — a timeout, a 502, a body
// cut short — is charged the whole reservation it was sent under; one the
// server surely refused before its model ran (a 429) costs nothing. Each
// retry is paid for before it is sent.
func TestFailedAttemptsAreChargedAtTheirBound(t *testing.T) {
	srv := fakellm.New(t,
		fakellm.Hang(),
		fakellm.RateLimited("0"),
		fakellm.ServerError(502),
		fakellm.Text("ok").CutAfter(30),
		fakellm.ToolCall("complete", `{"summary":"done"}`).WithUsage(1000, 10, 0),
	)
	meter, _ := budget.NewMeter(1, nil)
	a, traj := billingAgent(t, srv.URL(), meter, 300*time.Millisecond, 6)
	out := a.Run(context.Background())
	if out.Status != StatusCompleted {
		t.Fatalf("outcome = %+v", out)
	}
	var requests, responses []Event
	for _, e := range events(t, traj) {
		switch e.Type {
		case EventRequest:
			requests = append(requests, e)
		case EventResponse:
			responses = append(responses, e)
		}
	}
	if len(requests) != 5 || len(responses) != 5 {
		t.Fatalf("%d request and %d response events, want 5 of each (one per attempt):\n%s", len(requests), len(responses), traj)
	}
	price := testPrice(t)
	bound := price.Bound(requests[0].PromptBound, requests[0].MaxCompletionTokens)
	wantCharged := []bool{true, false, true, true, false}
	for i, r := range responses {
		if r.ChargedAtBound != wantCharged[i] {
			t.Errorf("attempt %d (%s): charged at its bound %v, want %v", i+1, r.Error, r.ChargedAtBound, wantCharged[i])
		}
		if r.ChargedAtBound && r.CostUSD != bound.USD() {
			t.Errorf("attempt %d: cost $%v, want its bound $%v", i+1, r.CostUSD, bound.USD())
		}
		if i > 0 && requests[i].Attempt != i+1 {
			t.Errorf("request event %d names attempt %d: each retry is reserved before it is sent", i+1, requests[i].Attempt)
		}
	}
	reply := price.Cost(budget.Usage{PromptTokens: 1000, CompletionTokens: 10})
	tot := meter.Totals()
	if want := 3*bound + reply; tot.Spent != want || tot.Reserved != 0 || tot.Calls != 4 {
		t.Errorf("meter = %+v; want 3 attempts at their bound %s plus the reply %s, 4 charges, nothing held", tot, bound, reply)
	}
}

// An endpoint that refuses connections bills nothing: its attempts are
// released.
func TestRefusedConnectionsCostNothing(t *testing.T) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := l.Addr().String()
	l.Close()
	meter, _ := budget.NewMeter(1, nil)
	a, _ := billingAgent(t, "http://"+addr+"/v1", meter, time.Second, 2)
	out := a.Run(context.Background())
	if out.Status != StatusModelError || !strings.Contains(out.Error, "giving up after 3 attempts") {
		t.Fatalf("outcome = %+v, want model_error after 3 refused attempts", out)
	}
	if tot := meter.Totals(); tot.Spent != 0 || tot.Reserved != 0 || tot.Calls != 0 {
		t.Errorf("meter = %+v, want nothing charged or held", tot)
	}
}

// Retries that may have been billed are paid for before they are sent, so
// they end the run at the cap rather than pass it.
func TestChargedRetriesStopAtTheCap(t *testing.T) {
	srv := fakellm.New(t)
	srv.Forever(fakellm.Hang())
	const capUSD = 0.01
	meter, _ := budget.NewMeter(capUSD, nil)
	a, traj := billingAgent(t, srv.URL(), meter, 200*time.Millisecond, 50)
	out := a.Run(context.Background())
	if out.Status != StatusBudgetExhausted {
		t.Fatalf("outcome = %+v, want budget_exhausted", out)
	}
	tot := meter.Totals()
	if tot.Spent.USD() > capUSD || tot.Reserved != 0 {
		t.Errorf("spent %s (holding %s) of a $%v cap", tot.Spent, tot.Reserved, capUSD)
	}
	sent := len(srv.Requests())
	if sent < 2 || int64(sent) != tot.Calls {
		t.Errorf("%d attempts sent, %d charged: want every attempt sent charged, and more than one", sent, tot.Calls)
	}
	if !strings.Contains(out.Error, "attempt") || strings.Count(traj.String(), `"charged_at_bound":true`) != sent {
		t.Errorf("error %q; trajectory:\n%s", out.Error, traj)
	}
}

// A server that reports more usage than the call's bound ends the run at
// once as budget_exhausted; the overrun is recorded in the outcome and the
// trajectory, and no capped meter of the run reserves again.
func TestOverrunEndsTheRun(t *testing.T) {
	srv := fakellm.New(t,
		fakellm.ToolCall("run_command", `{"command":"ls"}`).WithUsage(2000, 50000, 0),
	)
	run, _ := budget.NewMeter(0, nil)
	task, _ := budget.NewMeter(0, run)
	a, traj := billingAgent(t, srv.URL(), task, time.Second, 0)
	out := a.Run(context.Background())
	if out.Status != StatusBudgetExhausted || !strings.Contains(out.Error, "more usage than the call's bound") {
		t.Fatalf("outcome = %+v, want budget_exhausted for the overrun", out)
	}
	if !strings.Contains(out.Error, budget.ErrOverrun.Error()) {
		t.Errorf("error %q does not name the overrun", out.Error)
	}
	var req, resp Event
	for _, e := range events(t, traj) {
		switch e.Type {
		case EventRequest:
			req = e
		case EventResponse:
			resp = e
		}
	}
	price := testPrice(t)
	excess := price.Cost(budget.Usage{PromptTokens: 2000, CompletionTokens: 50000}) - price.Bound(req.PromptBound, req.MaxCompletionTokens)
	if excess <= 0 {
		t.Fatalf("test arithmetic: the reply does not pass its bound (%s)", excess)
	}
	if out.Spend.OverrunUSD != excess.USD() || resp.OverrunUSD != excess.USD() {
		t.Errorf("overrun recorded: outcome $%v, trajectory $%v; want $%v", out.Spend.OverrunUSD, resp.OverrunUSD, excess.USD())
	}
	if resp.Error == "" {
		t.Errorf("the response event does not say why the run ended: %+v", resp)
	}
	if run.Totals().Overrun != excess {
		t.Errorf("the run's meter records an overrun of %s, want %s", run.Totals().Overrun, excess)
	}
	// Another task of the same run whose call a cap governs makes no call
	// at all: its cap rests on the same server.
	sibling, _ := budget.NewMeter(5, run)
	b, _ := billingAgent(t, srv.URL(), sibling, time.Second, 0)
	if out := b.Run(context.Background()); out.Status != StatusBudgetExhausted || out.Steps != 0 {
		t.Errorf("a task after the overrun: %+v, want budget_exhausted without a call", out)
	}
	if n := len(srv.Requests()); n != 1 {
		t.Errorf("%d requests, want 1", n)
	}
}
