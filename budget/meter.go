package budget

import (
	"errors"
	"fmt"
	"math"
	"sync"
)

// ErrExhausted is returned by Reserve when the budget left, in a meter or
// one of its parents, cannot pay even the smallest call asked for.
var ErrExhausted = errors.New("budget exhausted")

// Meter counts the spending of a task, or of a whole run, against an
// optional cap. Meters form a tree: a task's meter has the run's meter as its
// parent, and every reservation and charge made through a meter is made in
// each of its ancestors too, so a parent's totals include its children's.
//
// The meters of one tree share one mutex. Calls to a model take seconds, so
// the contention is nothing, and a reservation that must check and update
// several meters does so atomically with no lock ordering to get wrong.
// A Meter is safe for concurrent use.
type Meter struct {
	mu     *sync.Mutex // shared with every meter of the tree
	parent *Meter
	cap    Nanodollars // 0: unlimited

	spent    Nanodollars
	reserved Nanodollars
	usage    Usage
	calls    int64
	// overrun is what calls cost beyond what was reserved for them, or
	// beyond their completion limit (see ErrOverrun).
	overrun Nanodollars
}

// NewMeter returns a meter capped at capUSD dollars (rounded down to a whole
// nanodollar), or unlimited if capUSD is 0. parent, when not nil, is the
// meter this one's spending also counts against, typically the run-wide
// meter.
func NewMeter(capUSD float64, parent *Meter) (*Meter, error) {
	c, err := FromUSD(capUSD)
	if err != nil {
		return nil, fmt.Errorf("new meter: %w", err)
	}
	if c < 0 {
		return nil, fmt.Errorf("new meter: negative cap %s", c)
	}
	if c == 0 && capUSD != 0 {
		return nil, fmt.Errorf("new meter: cap $%v is below one nanodollar", capUSD)
	}
	m := &Meter{parent: parent, cap: c}
	if parent != nil {
		m.mu = parent.mu
	} else {
		m.mu = new(sync.Mutex)
	}
	return m, nil
}

// Reserve holds the money for one model call before it is made.
//
// promptUpperBound bounds the prompt's tokens (see PromptUpperBound); the
// reservation prices all of them at the full input rate. The completion limit
// starts at maxCompletion and is lowered to what the budget left in this
// meter and every ancestor can pay; the granted limit, to be sent as the
// request's max_completion_tokens, is Reservation.CompletionTokens. If not
// even minCompletion tokens can be paid, Reserve returns an error wrapping
// ErrExhausted and holds nothing.
//
// The amount is held in this meter and all its ancestors at once, so two
// tasks can never both be granted the last dollar. Every reservation must be
// settled with Commit, CommitBound or Release.
//
// Once any call of the tree cost more than was reserved for it (see
// ErrOverrun), Reserve refuses every further call that a cap governs — this
// meter's or an ancestor's — with an error wrapping both ErrExhausted and
// ErrOverrun: the server has shown it does not keep to the bounds the caps
// rest on, and a sibling's next call may overrun just the same. Calls no cap
// governs go on: there is no promise left to break.
func (m *Meter) Reserve(p Price, promptUpperBound, maxCompletion, minCompletion int64) (*Reservation, error) {
	return m.ReserveLeaving(0, p, promptUpperBound, maxCompletion, minCompletion)
}

// ReserveLeaving is Reserve for a call that must leave at least keep
// unreserved under every cap of m and its ancestors: the reserve an agent
// keeps for its final call. A call that fits only by using that reserve is
// refused with an error wrapping ErrExhausted, and the caller may ask again
// with keep 0.
func (m *Meter) ReserveLeaving(keep Nanodollars, p Price, promptUpperBound, maxCompletion, minCompletion int64) (*Reservation, error) {
	if keep < 0 {
		return nil, fmt.Errorf("reserve: invalid request: negative reserve %s to keep", keep)
	}
	if promptUpperBound < 0 || minCompletion < 1 || maxCompletion < minCompletion {
		return nil, fmt.Errorf("reserve: invalid request: prompt bound %d, completion %d..%d tokens (want prompt >= 0 and 1 <= min <= max)",
			promptUpperBound, minCompletion, maxCompletion)
	}
	rates := p.RatesFor(promptUpperBound)
	promptCost := mulSat(promptUpperBound, rates.Input)
	least := addSat(promptCost, mulSat(minCompletion, rates.Output))

	m.mu.Lock()
	defer m.mu.Unlock()
	if over := m.root().overrun; over > 0 && m.capped() {
		return nil, fmt.Errorf("reserve %s call: %w: %w: a call of this run cost %s more than was reserved for it, so the caps can no longer be kept",
			p.Model, ErrExhausted, ErrOverrun, over)
	}
	avail := m.available()
	if avail != math.MaxInt64 {
		if avail <= keep && keep > 0 {
			return nil, fmt.Errorf("reserve %s call: %w: %s is left, no more than the %s kept for the final call",
				p.Model, ErrExhausted, avail, keep)
		}
		avail -= keep
	}
	if least > avail || least == math.MaxInt64 {
		return nil, fmt.Errorf("reserve %s call: %w: the smallest call (%d prompt tokens, %d completion tokens) may cost %s and %s is left",
			p.Model, ErrExhausted, promptUpperBound, minCompletion, least, avail)
	}
	granted := maxCompletion
	if rates.Output > 0 {
		granted = min(granted, int64((avail-promptCost)/rates.Output))
	}
	amount := addSat(promptCost, mulSat(granted, rates.Output))
	for a := m; a != nil; a = a.parent {
		if a.reserved > math.MaxInt64-amount {
			return nil, fmt.Errorf("reserve %s call: %w: %s cannot be held on top of %s", p.Model, ErrExhausted, amount, a.reserved)
		}
	}
	for a := m; a != nil; a = a.parent {
		a.reserved = addSat(a.reserved, amount)
	}
	return &Reservation{meter: m, price: p, amount: amount, prompt: promptUpperBound, completion: granted}, nil
}

// root returns the meter at the top of m's tree.
func (m *Meter) root() *Meter {
	for m.parent != nil {
		m = m.parent
	}
	return m
}

// capped reports whether m or one of its ancestors has a cap.
func (m *Meter) capped() bool {
	for a := m; a != nil; a = a.parent {
		if a.cap != 0 {
			return true
		}
	}
	return false
}

// available returns what can still be reserved: the smallest amount left
// under the caps of m and its ancestors, MaxInt64 if none is capped. The
// caller holds the tree's mutex.
func (m *Meter) available() Nanodollars {
	avail := Nanodollars(math.MaxInt64)
	for a := m; a != nil; a = a.parent {
		if a.cap == 0 {
			continue
		}
		used := addSat(a.spent, a.reserved)
		left := Nanodollars(0)
		if used < a.cap {
			left = a.cap - used
		}
		avail = min(avail, left)
	}
	return avail
}

// settle moves a reservation's amount out of reserved in m and its
// ancestors and, for a commit, records the charge and the overrun (see
// ErrOverrun). The caller holds the tree's mutex.
func (m *Meter) settle(amount Nanodollars, charged bool, cost, overrun Nanodollars, u Usage) {
	for a := m; a != nil; a = a.parent {
		a.reserved -= amount
		if charged {
			a.spent = addSat(a.spent, cost)
			a.usage = a.usage.Add(u)
			a.calls++
			if overrun > 0 {
				a.overrun = addSat(a.overrun, overrun)
			}
		}
	}
}

// Totals returns a consistent snapshot of the meter.
func (m *Meter) Totals() Totals {
	m.mu.Lock()
	defer m.mu.Unlock()
	return Totals{Cap: m.cap, Spent: m.spent, Reserved: m.reserved, Usage: m.usage, Calls: m.calls, Overrun: m.overrun}
}

// Summary returns Totals().Summary().
func (m *Meter) Summary() Summary { return m.Totals().Summary() }

// TightestCap returns the smallest cap of m and its ancestors, 0 if none
// is capped.
func (m *Meter) TightestCap() Nanodollars {
	m.mu.Lock()
	defer m.mu.Unlock()
	var c Nanodollars
	for a := m; a != nil; a = a.parent {
		if a.cap != 0 && (c == 0 || a.cap < c) {
			c = a.cap
		}
	}
	return c
}

// Available returns what can still be reserved under the caps of m and
// its ancestors, and false if none is capped.
func (m *Meter) Available() (Nanodollars, bool) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if !m.capped() {
		return 0, false
	}
	return m.available(), true
}
