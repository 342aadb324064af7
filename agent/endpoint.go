package agent

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"
)

// DefaultOutageWait is how long a run waits, unless told otherwise, for a
// model endpoint that stopped answering before the tasks waiting for it end.
const DefaultOutageWait = 30 * time.Minute

// Pacing of the probes while the endpoint is down: the first after
// firstProbeWait, each later one after twice the wait, up to maxProbeWait.
// A probe that does not answer within probeTimeout counts as unanswered.
const (
	firstProbeWait = time.Second
	maxProbeWait   = 30 * time.Second
	probeTimeout   = 10 * time.Second
)

// ErrOutage means the model endpoint stayed unavailable longer than the run
// waits for it.
var ErrOutage = errors.New("model endpoint unavailable")

// EndpointConfig configures an Endpoint. Zero values select the defaults
// documented on each field.
type EndpointConfig struct {
	// Name is how messages name the endpoint: its base URL without
	// credentials (see EndpointName).
	Name string
	// MaxCalls is the most model calls allowed at once, the ceiling the
	// gate lowers while the endpoint rate-limits; default 1.
	MaxCalls int
	// OutageWait bounds how long calls and tasks wait for an endpoint that
	// stopped answering, from the moment it was found down until a call
	// gets an answer again; default DefaultOutageWait.
	OutageWait time.Duration
	// Probe asks the endpoint whether it answers, at no cost (Probe of
	// OpenAIModel). It returns an error wrapping ErrUnreachable when the
	// endpoint does not answer; any other result means it does. Nil
	// means no probe: while down, the gate lets the calls try again after
	// each probe wait.
	Probe func(ctx context.Context) error
	// OnChange hears about every change of the endpoint's state, in order.
	// It is called with the gate's lock held: it must not call the
	// Endpoint and should return quickly (print a line, say).
	OnChange func(EndpointChange)
	// FirstProbeWait is the wait before the first probe of an outage,
	// doubled for each later one up to 30s; default 1s.
	FirstProbeWait time.Duration
}

// EndpointState is what an EndpointChange reports.
type EndpointState string

// The changes an Endpoint reports.
const (
	// EndpointDown: the endpoint stopped answering; calls wait for it and
	// no task should start.
	EndpointDown EndpointState = "down"
	// EndpointUp: the endpoint answers again after an outage.
	EndpointUp EndpointState = "up"
	// EndpointGaveUp: the outage outlasted OutageWait; every call waiting
	// or still to come fails with ErrOutage.
	EndpointGaveUp EndpointState = "gave_up"
	// EndpointThrottled: the endpoint rate-limits; the calls allowed at
	// once fell to a new low since the last EndpointRestored.
	EndpointThrottled EndpointState = "throttled"
	// EndpointRestored: all MaxCalls are allowed at once again.
	EndpointRestored EndpointState = "restored"
)

// EndpointChange is one change of the endpoint's state.
type EndpointChange struct {
	State    EndpointState
	Endpoint string
	// Err is the failure that showed the endpoint down (EndpointDown,
	// EndpointGaveUp).
	Err error
	// Since is how long the endpoint has been unavailable (EndpointUp,
	// EndpointGaveUp); Wait is the longest the run waits for it
	// (EndpointDown).
	Since, Wait time.Duration
	// Calls is how many calls are allowed at once (EndpointThrottled,
	// EndpointRestored).
	Calls int
}

// String is one line for a person.
func (c EndpointChange) String() string {
	switch c.State {
	case EndpointDown:
		return fmt.Sprintf("model endpoint %s is unavailable (%v): no task starts and model calls wait until it answers, for up to %s",
			c.Endpoint, transportCause(c.Err), c.Wait)
	case EndpointUp:
		return fmt.Sprintf("model endpoint %s answers again after %s: tasks resume", c.Endpoint, c.Since.Round(time.Second))
	case EndpointGaveUp:
		return fmt.Sprintf("model endpoint %s has been unavailable for %s (%v): the tasks waiting for it end as model_error",
			c.Endpoint, c.Since.Round(time.Second), transportCause(c.Err))
	case EndpointThrottled:
		return fmt.Sprintf("model endpoint %s is rate-limiting: at most %s at once for now", c.Endpoint, plural(c.Calls, "model call"))
	case EndpointRestored:
		return fmt.Sprintf("model endpoint %s: back to %s at once", c.Endpoint, plural(c.Calls, "model call"))
	}
	return fmt.Sprintf("model endpoint %s: %s", c.Endpoint, c.State)
}

// Endpoint is the one place of a run that knows the health of its model
// endpoint; every task's model calls pass through it (OpenAIConfig.Endpoint)
// and the scheduler asks it before starting a task (Ready).
//
// When a call has used its retries on failures that mean the endpoint is
// unavailable (refused or broken connections, 502, 503, 504, 429), the
// endpoint is marked down: calls wait instead of failing, Ready waits, and a
// probe asks the endpoint at growing intervals until it answers. The wait
// is bounded by OutageWait, after which the waiting calls fail with
// ErrOutage. While the endpoint answers 429, the number of calls allowed at
// once is halved (at most once per round of calls) and raised back by one
// per round of successful calls. It is safe for concurrent use; a nil
// *Endpoint lets every call through.
type Endpoint struct {
	cfg    EndpointConfig
	ctx    context.Context // ends with Close: stops the probe
	cancel context.CancelFunc

	mu sync.Mutex
	// Health. downSince is set when an outage begins and cleared only when
	// a call gets an answer: until then the endpoint is suspect, and a call
	// failing for an outage waits without using its retries.
	down      bool
	downSince time.Time
	lastErr   error
	upCh      chan struct{} // closed when the endpoint is no longer down
	probing   bool
	probeWait time.Duration
	gaveUp    error
	gaveUpCh  chan struct{}
	// Concurrency. limit is fractional so that it rises by one per round
	// of successes; grants are numbered so that a 429 answering a call
	// started before the last cut does not cut again.
	limit    float64
	inFlight int
	freed    chan struct{} // closed when a call ends or the limit rises
	seq      uint64
	cutAt    uint64
	lowest   int // the fewest calls at once reported since the last restore; 0: none
}

// NewEndpoint returns the gate of one endpoint; Close it when the run ends.
func NewEndpoint(cfg EndpointConfig) *Endpoint {
	cfg.MaxCalls = max(cfg.MaxCalls, 1)
	if cfg.OutageWait <= 0 {
		cfg.OutageWait = DefaultOutageWait
	}
	if cfg.FirstProbeWait <= 0 {
		cfg.FirstProbeWait = firstProbeWait
	}
	e := &Endpoint{cfg: cfg, limit: float64(cfg.MaxCalls), freed: make(chan struct{}),
		upCh: make(chan struct{}), gaveUpCh: make(chan struct{})}
	close(e.upCh)
	e.ctx, e.cancel = context.WithCancel(context.Background())
	return e
}

// Close stops the probe of an outage; calls still waiting keep waiting
// until their context ends.
func (e *Endpoint) Close() {
	if e != nil {
		e.cancel()
	}
}

// OutageWait is the longest an outage is waited for; zero for a nil
// Endpoint.
func (e *Endpoint) OutageWait() time.Duration {
	if e == nil {
		return 0
	}
	return e.cfg.OutageWait
}

// Check probes the endpoint once, before a run: nil when it answers, else
// the probe's error.
func (e *Endpoint) Check(ctx context.Context) error {
	if e == nil || e.cfg.Probe == nil {
		return nil
	}
	pctx, cancel := context.WithTimeout(ctx, probeTimeout)
	defer cancel()
	return e.cfg.Probe(pctx)
}

// Ready returns once the endpoint is not known to be down: at once when it
// answers, after the outage when it does not. It returns an error wrapping
// ErrOutage when the outage outlasted OutageWait, or ctx's error.
func (e *Endpoint) Ready(ctx context.Context) error {
	if e == nil {
		return nil
	}
	return e.waitWhileDown(ctx, ignoredHold{})
}

// outage marks the endpoint down because of err, if it is not already, and
// waits until it answers again. It returns nil then, an error wrapping
// ErrOutage once the outage outlasted OutageWait, or ctx's error.
func (e *Endpoint) outage(ctx context.Context, err error) error {
	e.mu.Lock()
	e.lastErr = err
	if !e.down && e.gaveUp == nil {
		e.down = true
		e.upCh = make(chan struct{})
		if e.downSince.IsZero() {
			e.downSince = time.Now()
		}
		e.notify(EndpointChange{State: EndpointDown, Err: err, Wait: e.cfg.OutageWait - time.Since(e.downSince).Round(time.Second)})
		if !e.probing {
			e.probing = true
			go e.probe()
		}
	}
	e.mu.Unlock()
	return e.waitWhileDown(ctx, heldCallOf(ctx))
}

// waitWhileDown returns nil once the endpoint is not down, the outage
// error once it outlasted OutageWait, or ctx's error. held hears about
// the wait.
func (e *Endpoint) waitWhileDown(ctx context.Context, held heldCall) error {
	for {
		e.mu.Lock()
		up, gaveUp, down, why := e.upCh, e.gaveUp, e.down, e.lastErr
		e.mu.Unlock()
		switch {
		case gaveUp != nil:
			return gaveUp
		case !down:
			return nil
		}
		held.hold(why)
		select {
		case <-up:
		case <-e.gaveUpCh:
		case <-ctx.Done():
			held.release()
			return ctx.Err()
		}
		held.release()
	}
}

// probe asks the endpoint at growing intervals whether it answers, until it
// does, the outage outlasts OutageWait, or the Endpoint is closed.
func (e *Endpoint) probe() {
	for {
		e.mu.Lock()
		if !e.down {
			e.probing = false
			e.mu.Unlock()
			return
		}
		e.probeWait = min(max(2*e.probeWait, e.cfg.FirstProbeWait), maxProbeWait)
		wait, giveUpAt := e.probeWait, e.downSince.Add(e.cfg.OutageWait)
		e.mu.Unlock()

		timer := time.NewTimer(min(wait, time.Until(giveUpAt)))
		select {
		case <-e.ctx.Done():
			timer.Stop()
			return
		case <-timer.C:
		}
		if !time.Now().Before(giveUpAt) {
			e.giveUp()
			return
		}
		var err error
		if e.cfg.Probe != nil {
			pctx, cancel := context.WithTimeout(e.ctx, probeTimeout)
			err = e.cfg.Probe(pctx)
			cancel()
		}
		if e.ctx.Err() != nil {
			return
		}
		if !errors.Is(err, ErrUnreachable) {
			e.mu.Lock()
			e.setUp()
			e.probing = false
			e.mu.Unlock()
			return
		}
	}
}

// giveUp ends the wait for an outage that outlasted OutageWait.
func (e *Endpoint) giveUp() {
	e.mu.Lock()
	defer e.mu.Unlock()
	since := time.Since(e.downSince)
	e.gaveUp = fmt.Errorf("%w: %s has not answered for %s, the longest the run waits for it: %v",
		ErrOutage, e.cfg.Name, since.Round(time.Second), transportCause(e.lastErr))
	e.probing = false
	close(e.gaveUpCh)
	e.notify(EndpointChange{State: EndpointGaveUp, Err: e.lastErr, Since: since})
}

// setUp lets the waiting calls and tasks go; the caller holds mu.
func (e *Endpoint) setUp() {
	if !e.down || e.gaveUp != nil {
		return
	}
	e.down = false
	close(e.upCh)
	e.notify(EndpointChange{State: EndpointUp, Since: time.Since(e.downSince)})
}

// answered records that a call got an answer: any outage is over. The
// caller holds mu.
func (e *Endpoint) answered() {
	e.setUp()
	e.downSince, e.probeWait = time.Time{}, 0
}

// notify reports a change; the caller holds mu, which keeps the reports in
// order.
func (e *Endpoint) notify(c EndpointChange) {
	if e.cfg.OnChange != nil {
		c.Endpoint = e.cfg.Name
		e.cfg.OnChange(c)
	}
}

// heldCall hears when the gate holds a model call and when it lets it go;
// the agent puts one in the context of its calls (see timeLimit), so that
// the wait does not count against its time limit.
type heldCall interface {
	// hold: the call waits, for the endpoint to answer again (outage is
	// the failure that showed it down) or, when outage is nil, for a turn
	// while the endpoint rate-limits.
	hold(outage error)
	release()
}

type heldCallKey struct{}

// heldCallOf returns the heldCall in ctx, or one that ignores everything.
func heldCallOf(ctx context.Context) heldCall {
	if h, ok := ctx.Value(heldCallKey{}).(heldCall); ok {
		return h
	}
	return ignoredHold{}
}

type ignoredHold struct{}

func (ignoredHold) hold(error) {}
func (ignoredHold) release()   {}
