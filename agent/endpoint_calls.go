package agent

import (
	"context"
	"errors"
	"net/http"
)

// The calls through an Endpoint: each attempt waits for a turn, and how it
// ended moves the number of calls allowed at once and the endpoint's health.

// grant is one model call attempt let through the gate.
type grant struct {
	e   *Endpoint
	seq uint64
}

// admit waits until a call may be attempted: the endpoint is not down and
// fewer calls than allowed are in flight. The caller settles the grant when
// the attempt ends. Time spent waiting is reported to the call's heldCall.
func (e *Endpoint) admit(ctx context.Context) (*grant, error) {
	if e == nil {
		return nil, nil
	}
	held := heldCallOf(ctx)
	for {
		if err := e.waitWhileDown(ctx, held); err != nil {
			return nil, err
		}
		e.mu.Lock()
		if e.down || e.gaveUp != nil {
			e.mu.Unlock()
			continue
		}
		if e.inFlight < e.allowed() {
			e.inFlight++
			e.seq++
			g := &grant{e: e, seq: e.seq}
			e.mu.Unlock()
			return g, nil
		}
		freed := e.freed
		e.mu.Unlock()
		held.hold(nil)
		select {
		case <-freed:
			held.release()
		case <-ctx.Done():
			held.release()
			return nil, ctx.Err()
		}
	}
}

// settle records how an attempt ended: an answer clears a suspected outage,
// a success raises the number of calls allowed at once, a rate limit
// lowers it.
func (g *grant) settle(err error) {
	if g == nil {
		return
	}
	e := g.e
	e.mu.Lock()
	defer e.mu.Unlock()
	e.inFlight--
	e.wake()
	switch {
	case err == nil:
		e.answered()
		e.raise()
	case rateLimited(err):
		if g.seq > e.cutAt {
			e.cut()
		}
	case !outageKind(err) && !errors.Is(err, ErrAttemptTimeout) && !errors.Is(err, context.Canceled) &&
		!errors.Is(err, context.DeadlineExceeded):
		e.answered() // a refusal is an answer: the endpoint is there
	}
}

// holds tells whether a call whose attempt failed with err should wait for
// the endpoint (outage) instead of retrying or failing: err means the
// endpoint is unavailable, and either the call has used its retries or an
// outage began and no call has been answered since.
func (e *Endpoint) holds(err error, retriesUsed bool) bool {
	if e == nil || !outageKind(err) {
		return false
	}
	e.mu.Lock()
	defer e.mu.Unlock()
	return retriesUsed || !e.downSince.IsZero()
}

// allowed is how many calls may be in flight; the caller holds mu.
func (e *Endpoint) allowed() int { return max(int(e.limit), 1) }

// cut halves the calls allowed at once, reporting each new low; the
// caller holds mu.
func (e *Endpoint) cut() {
	e.limit = max(e.limit/2, 1)
	e.cutAt = e.seq
	if n := e.allowed(); n < e.cfg.MaxCalls && (e.lowest == 0 || n < e.lowest) {
		e.lowest = n
		e.notify(EndpointChange{State: EndpointThrottled, Calls: n})
	}
}

// raise adds one call to those allowed at once per round of successes;
// the caller holds mu.
func (e *Endpoint) raise() {
	max := float64(e.cfg.MaxCalls)
	if e.limit >= max {
		return
	}
	before := e.allowed()
	e.limit = min(e.limit+1/e.limit, max)
	if e.allowed() > before {
		e.wake()
	}
	if e.lowest != 0 && e.allowed() == e.cfg.MaxCalls {
		e.lowest = 0
		e.notify(EndpointChange{State: EndpointRestored, Calls: e.allowed()})
	}
}

// wake lets the calls waiting for a turn look again; the caller holds mu.
func (e *Endpoint) wake() {
	close(e.freed)
	e.freed = make(chan struct{})
}

// outageKind tells the failures that mean the endpoint is unavailable for
// now, whatever the request: it cannot be reached or the connection broke,
// a gateway says the server behind it is down (502, 503, 504), or it
// refuses calls for now (429, but not an exhausted quota). An attempt that
// timed out is not one: the server may be working on it.
func outageKind(err error) bool {
	if errors.Is(err, ErrAttemptTimeout) || errors.Is(err, ErrQuota) {
		return false
	}
	var me *ModelError
	if errors.As(err, &me) {
		switch me.StatusCode {
		case http.StatusTooManyRequests, http.StatusBadGateway, http.StatusServiceUnavailable, http.StatusGatewayTimeout:
			return true
		}
		return false
	}
	return connectionFailure(err)
}

// rateLimited tells a 429 that asks to slow down from an exhausted quota.
func rateLimited(err error) bool {
	var me *ModelError
	return errors.As(err, &me) && me.StatusCode == http.StatusTooManyRequests && !errors.Is(err, ErrQuota)
}

// held is the error of a call that the gate held until ctx ended (the
// error names the last failed attempt) or until it gave up waiting (err).
func (p retryPolicy) held(ctx context.Context, attempts int, last, err error) error {
	if ctx.Err() == nil {
		return err
	}
	return canceled(ctx, max(attempts, 1), last, p.redact)
}
