package agent

import (
	"context"
	"sync"
	"time"
)

// timeLimit is an agent's wall-time limit as a context. It expires at its
// deadline, which the time its model calls spend held by the endpoint gate
// (an outage, a turn while the endpoint rate-limits) pushes later, up to a
// credit in total: that wait is not the agent's time, and the credit keeps
// the task, and its sandbox, bounded. It also ends when its parent does,
// with the parent's error. Its children see its expiry as
// context.DeadlineExceeded, like a context.WithDeadline's.
type timeLimit struct {
	parent     context.Context
	done       chan struct{}
	stopParent func() bool
	timer      *time.Timer
	record     func(Event)

	mu       sync.Mutex
	deadline time.Time
	credit   time.Duration // what is left of it
	used     time.Duration // credit already spent
	holds    int
	heldAt   time.Time
	outage   bool // the current hold waits for an outage
	err      error
}

var _ heldCall = (*timeLimit)(nil)

// newTimeLimit returns a context that expires at deadline, moved later by
// held calls up to credit; stop releases it. record, if not nil, receives
// an event when a call starts and stops waiting for an outage.
func newTimeLimit(parent context.Context, deadline time.Time, credit time.Duration, record func(Event)) (*timeLimit, func()) {
	t := &timeLimit{parent: parent, done: make(chan struct{}), deadline: deadline, credit: max(credit, 0), record: record}
	t.mu.Lock()
	t.timer = time.AfterFunc(time.Until(deadline), t.expire)
	t.mu.Unlock()
	t.stopParent = context.AfterFunc(parent, func() { t.end(parent.Err()) })
	return t, func() {
		t.stopParent()
		t.end(context.Canceled)
	}
}

// Deadline is the time the context expires if nothing changes: while a
// call is held, when the credit would run out.
func (t *timeLimit) Deadline() (time.Time, bool) {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.due(), true
}

func (t *timeLimit) Done() <-chan struct{} { return t.done }

func (t *timeLimit) Err() error {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.err
}

func (t *timeLimit) Value(key any) any {
	if key == (heldCallKey{}) {
		return t
	}
	return t.parent.Value(key)
}

// heldTime is the credit spent so far, a hold in progress included.
func (t *timeLimit) heldTime() time.Duration {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.holds > 0 {
		return t.used + min(time.Since(t.heldAt), t.credit)
	}
	return t.used
}

func (t *timeLimit) hold(outage error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.holds++
	if t.holds == 1 {
		t.heldAt = time.Now()
		t.arm()
	}
	if outage != nil && !t.outage {
		t.outage = true
		t.event(Event{Type: EventEndpoint, Text: "the model endpoint is unavailable: the call waits for it", Error: outage.Error()})
	}
}

func (t *timeLimit) release() {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.holds == 0 {
		return
	}
	t.holds--
	if t.holds > 0 {
		return
	}
	held := time.Since(t.heldAt)
	spent := min(held, t.credit)
	t.credit -= spent
	t.used += spent
	t.deadline = t.deadline.Add(spent)
	t.arm()
	if t.outage {
		t.outage = false
		t.event(Event{Type: EventEndpoint, Text: "the call waited for the model endpoint", WaitMS: held.Milliseconds()})
	}
}

// due is when the context expires; the caller holds mu.
func (t *timeLimit) due() time.Time {
	if t.holds > 0 {
		return t.deadline.Add(t.credit)
	}
	return t.deadline
}

// arm sets the timer for due; the caller holds mu.
func (t *timeLimit) arm() {
	if t.err == nil {
		t.timer.Reset(time.Until(t.due()))
	}
}

// expire ends the context if its time has come, and arms the timer again
// if a hold moved the deadline meanwhile.
func (t *timeLimit) expire() {
	t.mu.Lock()
	defer t.mu.Unlock()
	if time.Now().Before(t.due()) {
		t.arm()
		return
	}
	t.endLocked(context.DeadlineExceeded)
}

// end closes the context with err, once.
func (t *timeLimit) end(err error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.endLocked(err)
}

// endLocked is end for a caller that holds mu.
func (t *timeLimit) endLocked(err error) {
	if t.err != nil {
		return
	}
	t.err = err
	t.timer.Stop()
	close(t.done)
}

// event records e, if there is a recorder; the caller holds mu.
func (t *timeLimit) event(e Event) {
	if t.record != nil {
		t.record(e)
	}
}
