package agent

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/runner-dev/runner/internal/fakellm"
)

// changeLog keeps an endpoint's changes, and anything else a test wants
// ordered with them, in the order they happened.
type changeLog struct {
	mu     sync.Mutex
	lines  []string
	states chan EndpointState
}

func newChangeLog() *changeLog { return &changeLog{states: make(chan EndpointState, 100)} }

func (l *changeLog) onChange(c EndpointChange) {
	l.add(string(c.State) + ": " + c.String())
	l.states <- c.State
}

func (l *changeLog) add(line string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.lines = append(l.lines, line)
}

func (l *changeLog) all() []string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return append([]string(nil), l.lines...)
}

// await waits for the next change, which must be want.
func (l *changeLog) await(t *testing.T, want EndpointState) {
	t.Helper()
	select {
	case got := <-l.states:
		if got != want {
			t.Fatalf("endpoint change %q, want %q; so far: %q", got, want, l.all())
		}
	case <-time.After(time.Minute):
		t.Fatalf("no %q change within a minute; so far: %q", want, l.all())
	}
}

// gatedModel is a model of llm behind its own endpoint gate, retrying
// once without waiting.
func gatedModel(t *testing.T, llm *fakellm.Server, cfg EndpointConfig) (*OpenAIModel, *Endpoint) {
	t.Helper()
	var gate *Endpoint
	m, _ := newModel(t, llm, func(c *OpenAIConfig) {
		c.MaxRetries = 1
		c.Endpoint = NewEndpoint(cfg)
		gate = c.Endpoint
	})
	if gate.cfg.Probe == nil {
		gate.cfg.Probe = m.Probe
	}
	t.Cleanup(gate.Close)
	return m, gate
}

// The endpoint goes down while calls are made: the call that used its
// retries marks it down and waits, the scheduler's Ready waits too, and
// both go on once a probe finds the endpoint back; the call succeeds.
func TestEndpointHoldsCallsThroughAnOutage(t *testing.T) {
	llm := fakellm.New(t)
	llm.Forever(fakellm.Text("ok"))
	log := newChangeLog()
	m, gate := gatedModel(t, llm, EndpointConfig{Name: "fake", FirstProbeWait: 10 * time.Millisecond, OnChange: log.onChange})

	llm.Down()
	done := make(chan error, 1)
	go func() {
		resp, err := m.Complete(context.Background(), userRequest("hi"))
		if err == nil && resp.Message.Content != "ok" {
			err = fmt.Errorf("reply %q", resp.Message.Content)
		}
		log.add("call returned")
		done <- err
	}()
	log.await(t, EndpointDown)
	ready := make(chan error, 1)
	go func() {
		err := gate.Ready(context.Background())
		log.add("ready")
		ready <- err
	}()
	probes := llm.ModelListRequests()
	llm.Up()
	log.await(t, EndpointUp)
	if err := <-done; err != nil {
		t.Fatalf("Complete through the outage: %v", err)
	}
	if err := <-ready; err != nil {
		t.Fatalf("Ready: %v", err)
	}
	got := log.all()
	if len(got) != 4 || !strings.HasPrefix(got[0], "down: ") || !strings.HasPrefix(got[1], "up: ") {
		t.Fatalf("changes and returns = %q; want down, up, then the call and Ready returning", got)
	}
	if !strings.Contains(got[0], "model endpoint fake is unavailable") || !strings.Contains(got[0], "connection refused") {
		t.Errorf("the down message does not say what happened: %q", got[0])
	}
	if llm.ModelListRequests() <= probes {
		t.Errorf("no probe after the endpoint came back")
	}
	if n := len(llm.Requests()); n != 1 {
		t.Errorf("%d chat requests reached the server, want 1 (none while it was down)", n)
	}
}

// An outage longer than OutageWait ends the waiting call, the waiting
// scheduler and every later call with ErrOutage, naming the endpoint.
func TestEndpointGivesUpAfterOutageWait(t *testing.T) {
	llm := fakellm.New(t)
	log := newChangeLog()
	m, gate := gatedModel(t, llm, EndpointConfig{Name: "fake", OutageWait: 300 * time.Millisecond,
		FirstProbeWait: 10 * time.Millisecond, OnChange: log.onChange})
	llm.Down()
	_, err := m.Complete(context.Background(), userRequest("hi"))
	if !errors.Is(err, ErrOutage) || !strings.Contains(err.Error(), "fake has not answered for") {
		t.Fatalf("Complete = %v, want ErrOutage naming the endpoint", err)
	}
	log.await(t, EndpointDown)
	log.await(t, EndpointGaveUp)
	if err := gate.Ready(context.Background()); !errors.Is(err, ErrOutage) {
		t.Errorf("Ready after giving up = %v, want ErrOutage", err)
	}
	if _, err := m.Complete(context.Background(), userRequest("again")); !errors.Is(err, ErrOutage) {
		t.Errorf("a later call = %v, want ErrOutage at once", err)
	}
}

// Once the endpoint is known down, a call that fails for the same reason
// waits for it at once instead of using its retries; a refusal (401)
// found by the probe counts as an answer.
func TestEndpointSuspectCallsWaitWithoutRetrying(t *testing.T) {
	var down atomic.Bool
	down.Store(true)
	llm := fakellm.New(t)
	llm.Forever(fakellm.Func(func(fakellm.Request) fakellm.Turn {
		if down.Load() {
			return fakellm.ServerError(http.StatusServiceUnavailable)
		}
		return fakellm.Text("ok")
	}))
	log := newChangeLog()
	probes := make(chan error) // the test answers each probe
	var retries atomic.Int32
	var gate *Endpoint
	m, _ := newModel(t, llm, func(c *OpenAIConfig) {
		c.MaxRetries = 3
		c.OnRetry = func(int, error, time.Duration) { retries.Add(1) }
		c.Endpoint = NewEndpoint(EndpointConfig{Name: "fake", FirstProbeWait: time.Millisecond, OnChange: log.onChange,
			Probe: func(ctx context.Context) error {
				select {
				case err := <-probes:
					return err
				case <-ctx.Done():
					return fmt.Errorf("%w: %v", ErrUnreachable, ctx.Err())
				}
			}})
		gate = c.Endpoint
	})
	t.Cleanup(gate.Close)
	answering := fmt.Errorf("list models: %w", ErrAuth) // the server answers: it is up

	first := make(chan error, 1)
	go func() { _, err := m.Complete(context.Background(), userRequest("one")); first <- err }()
	log.await(t, EndpointDown)
	if n := retries.Load(); n != 3 {
		t.Errorf("the first call retried %d times before the endpoint was marked down, want 3", n)
	}
	probes <- fmt.Errorf("%w: 503", ErrUnreachable)
	probes <- answering
	log.await(t, EndpointUp)
	// The probe found an answer but the calls still fail: the endpoint is
	// down again at the first failure, with no retry spent.
	log.await(t, EndpointDown)
	if n := retries.Load(); n != 3 {
		t.Errorf("%d retries after the endpoint was known down, want none", n-3)
	}
	down.Store(false)
	probes <- answering
	log.await(t, EndpointUp)
	if err := <-first; err != nil {
		t.Fatalf("Complete: %v", err)
	}
	if n := len(llm.Requests()); n != 6 {
		t.Errorf("%d chat requests, want 6: four before the outage was found, one after each probe that found an answer", n)
	}
}

// A run of 429s halves the calls allowed at once, once per round of calls;
// successes raise it back by one per round.
func TestEndpointLimitsCallsWhileRateLimited(t *testing.T) {
	log := newChangeLog()
	e := NewEndpoint(EndpointConfig{Name: "fake", MaxCalls: 8, OnChange: log.onChange})
	defer e.Close()
	ctx := context.Background()
	rateLimit := &ModelError{StatusCode: http.StatusTooManyRequests, Message: "slow down"}
	var grants []*grant
	for range 8 {
		g, err := e.admit(ctx)
		if err != nil {
			t.Fatal(err)
		}
		grants = append(grants, g)
	}
	if got := tryAdmit(e); got != nil {
		t.Fatalf("a 9th call was let through with MaxCalls 8")
	}
	grants[0].settle(rateLimit)
	log.await(t, EndpointThrottled)
	if got := e.allowedNow(); got != 4 {
		t.Fatalf("after a 429: %d calls allowed, want 4", got)
	}
	// The other calls started before the cut: their 429s do not cut again.
	grants[1].settle(rateLimit)
	grants[2].settle(rateLimit)
	if got := e.allowedNow(); got != 4 {
		t.Errorf("429s of calls started before the cut: %d allowed, want still 4", got)
	}
	for _, g := range grants[3:] {
		g.settle(nil)
	}
	// 5 successes at 4 allowed: 4 + 1/4 + 1/4.25 + ... passes 5.
	if got := e.allowedNow(); got != 5 {
		t.Errorf("after 5 successes: %d allowed, want 5", got)
	}
	// A 429 of a call started after the cut cuts again.
	g, _ := e.admit(ctx)
	g.settle(rateLimit)
	log.await(t, EndpointThrottled)
	if got := e.allowedNow(); got != 2 {
		t.Errorf("after a second 429: %d allowed, want 2", got)
	}
	for e.allowedNow() < 8 {
		g, err := e.admit(ctx)
		if err != nil {
			t.Fatal(err)
		}
		g.settle(nil)
	}
	log.await(t, EndpointRestored)
	if got := log.all(); !strings.Contains(got[len(got)-1], "back to 8 model calls at once") {
		t.Errorf("last message %q", got[len(got)-1])
	}
	// An exhausted quota is not a rate limit.
	g, _ = e.admit(ctx)
	g.settle(&ModelError{StatusCode: http.StatusTooManyRequests, Code: "insufficient_quota", kind: ErrQuota})
	if got := e.allowedNow(); got != 8 {
		t.Errorf("after insufficient_quota: %d allowed, want 8", got)
	}
}

// tryAdmit returns a grant if one is available without waiting.
func tryAdmit(e *Endpoint) *grant {
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	e.mu.Lock()
	free := e.inFlight < e.allowed()
	e.mu.Unlock()
	if !free {
		return nil
	}
	g, _ := e.admit(ctx)
	return g
}

func (e *Endpoint) allowedNow() int {
	e.mu.Lock()
	defer e.mu.Unlock()
	return e.allowed()
}

// Calls waiting for a turn go as soon as one ends.
func TestEndpointTurnsGoToWaitingCalls(t *testing.T) {
	e := NewEndpoint(EndpointConfig{MaxCalls: 1})
	defer e.Close()
	first, _ := e.admit(context.Background())
	got := make(chan *grant)
	go func() {
		g, _ := e.admit(context.Background())
		got <- g
	}()
	first.settle(nil)
	if g := <-got; g == nil {
		t.Fatal("the waiting call got no turn")
	}
}

// Time a call spends held by the gate does not count against the agent's
// time limit, up to MaxHeldTime: an outage longer than the time limit
// leaves the task completed when the credit covers it, and ends it at
// its time limit when there is none. The trajectory marks the wait.
func TestHeldTimeIsNotTheAgentsTime(t *testing.T) {
	for _, tt := range []struct {
		name   string
		credit time.Duration
		want   Status
	}{
		{"credited", time.Minute, StatusCompleted},
		{"no credit", 0, StatusTimeLimit},
	} {
		t.Run(tt.name, func(t *testing.T) {
			llm := fakellm.New(t)
			llm.Forever(fakellm.ToolCall("complete", `{"summary":"done"}`))
			log := newChangeLog()
			m, _ := gatedModel(t, llm, EndpointConfig{Name: "fake", FirstProbeWait: 10 * time.Millisecond, OnChange: log.onChange})
			var traj bytes.Buffer
			const limit = time.Second
			a := New(m, newMemSandbox(nil), Task{ID: "t", Prompt: "p"}, Config{
				Model: "gpt-4o-mini", Price: testPrice(t), TimeLimit: limit, MaxHeldTime: tt.credit,
				Trajectory: NewTrajectory(&traj),
			})
			llm.Down()
			start := time.Now()
			out := make(chan Outcome, 1)
			go func() { out <- a.Run(context.Background()) }()
			log.await(t, EndpointDown)
			if tt.credit == 0 {
				if got := <-out; got.Status != tt.want {
					t.Fatalf("outcome %+v, want %s", got, tt.want)
				}
				return
			}
			for time.Since(start) < 2*limit {
				time.Sleep(10 * time.Millisecond) // until the limit would have passed
			}
			llm.Up()
			got := <-out
			if got.Status != tt.want {
				t.Fatalf("outcome %+v, want %s", got, tt.want)
			}
			text := traj.String()
			if strings.Count(text, `"type":"endpoint"`) != 2 || !strings.Contains(text, `"text":"the model endpoint is unavailable: the call waits for it"`) ||
				!strings.Contains(text, `"text":"the call waited for the model endpoint"`) {
				t.Errorf("the trajectory does not mark the wait:\n%s", text)
			}
		})
	}
}

// The time limit's context ends at its deadline with DeadlineExceeded,
// for it and its children; a hold moves the deadline by the time held, up
// to the credit; the parent's cancellation ends it with the parent's error.
func TestTimeLimitContext(t *testing.T) {
	parent, cancelParent := context.WithCancel(context.Background())
	defer cancelParent()
	tl, stop := newTimeLimit(parent, time.Now().Add(time.Hour), 30*time.Minute, nil)
	defer stop()
	before, _ := tl.Deadline()
	tl.hold(nil)
	held, _ := tl.Deadline()
	if d := held.Sub(before); d != 30*time.Minute {
		t.Errorf("deadline while held moved by %s, want the whole credit", d)
	}
	tl.release()
	after, _ := tl.Deadline()
	if d := after.Sub(before); d <= 0 || d > time.Minute {
		t.Errorf("deadline after a short hold moved by %s", d)
	}
	if tl.heldTime() != after.Sub(before) {
		t.Errorf("heldTime %s, deadline moved by %s", tl.heldTime(), after.Sub(before))
	}
	cancelParent()
	<-tl.Done()
	if !errors.Is(tl.Err(), context.Canceled) {
		t.Errorf("Err after the parent's cancellation = %v", tl.Err())
	}

	soon, stop2 := newTimeLimit(context.Background(), time.Now().Add(50*time.Millisecond), 0, nil)
	defer stop2()
	child, cancelChild := context.WithTimeout(soon, time.Hour)
	defer cancelChild()
	<-child.Done()
	if !errors.Is(soon.Err(), context.DeadlineExceeded) || !errors.Is(child.Err(), context.DeadlineExceeded) {
		t.Errorf("at the deadline: Err = %v, child's = %v; want DeadlineExceeded for both", soon.Err(), child.Err())
	}
}
