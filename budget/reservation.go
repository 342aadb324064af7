package budget

import (
	"errors"
	"fmt"
)

// ErrSettled is returned by Commit or Release on a reservation that was
// already committed or released; the second call changes nothing.
var ErrSettled = errors.New("reservation already settled")

// ErrOverrun is returned by Commit when the reported usage costs more than
// was reserved (the server ignored the completion limit or the prompt was
// longer than its bound), or has more completion tokens than were granted,
// whatever it cost: a server that ignored the limit once cannot be trusted
// with the next call. The true cost is recorded anyway, so the meters stay
// honest, and it is the only way spending can pass a cap; the excess is
// counted in Totals.Overrun, and the meter tree refuses further
// reservations. Commit's error is an *OverrunError.
var ErrOverrun = errors.New("call cost more than its reservation")

// OverrunError is ErrOverrun with its amount.
type OverrunError struct {
	Model string
	// Excess is what the call cost beyond its reservation or, when it cost
	// no more than that, what its completion tokens beyond the granted
	// limit cost.
	Excess Nanodollars
	// Charged and Reserved are the call's cost and the amount held for it.
	Charged, Reserved Nanodollars
	// Granted and Used are the completion tokens granted and reported.
	Granted, Used int64
}

func (e *OverrunError) Error() string {
	if e.Used > e.Granted {
		return fmt.Sprintf("commit %s call: %v: charged %s, reserved %s (%d completion tokens granted, %d used; %s beyond the limit)",
			e.Model, ErrOverrun, e.Charged, e.Reserved, e.Granted, e.Used, e.Excess)
	}
	return fmt.Sprintf("commit %s call: %v: charged %s, reserved %s (%d completion tokens granted, %d used)",
		e.Model, ErrOverrun, e.Charged, e.Reserved, e.Granted, e.Used)
}

// Unwrap makes errors.Is(err, ErrOverrun) hold.
func (e *OverrunError) Unwrap() error { return ErrOverrun }

// Reservation is money held for one call. It is settled exactly once: by
// Commit when the call returned a usage report, by CommitBound when the
// server may have billed it without saying how much, or by Release when
// it surely billed nothing. It is safe for concurrent use.
type Reservation struct {
	meter      *Meter
	price      Price
	amount     Nanodollars
	prompt     int64
	completion int64
	settled    bool // guarded by meter.mu
}

// CompletionTokens is the granted completion limit, to be sent as the
// request's max_completion_tokens.
func (r *Reservation) CompletionTokens() int64 { return r.completion }

// Amount is the money held.
func (r *Reservation) Amount() Nanodollars { return r.amount }

// Commit charges the cost of the call's actual usage at the reservation's
// price to the meter and its ancestors, counts one call, and frees the rest of
// the amount held. Commit returns ErrSettled if the reservation was already
// settled, and an *OverrunError (after recording the charge) if the cost
// exceeded the amount or the completion tokens exceeded the granted limit
// at a cost (a free model cannot overrun).
func (r *Reservation) Commit(actual Usage) error {
	actual = actual.normalized()
	cost := r.price.Cost(actual)
	excess := max(cost-r.amount, 0)
	if beyond := actual.CompletionTokens - r.completion; beyond > 0 && excess == 0 {
		excess = mulSat(beyond, r.price.RatesFor(actual.PromptTokens).Output)
	}
	r.meter.mu.Lock()
	defer r.meter.mu.Unlock()
	if r.settled {
		return fmt.Errorf("commit %s call: %w", r.price.Model, ErrSettled)
	}
	r.settled = true
	r.meter.settle(r.amount, true, cost, excess, actual)
	if excess > 0 {
		return &OverrunError{Model: r.price.Model, Excess: excess, Charged: cost, Reserved: r.amount,
			Granted: r.completion, Used: actual.CompletionTokens}
	}
	return nil
}

// CommitBound charges the whole amount held, counting the prompt bound and
// the granted completion limit as the call's usage: for a call the server
// may have billed without reporting its usage (a timeout, a connection cut
// after the request was sent, a reply without usage). It returns
// ErrSettled if the reservation was already settled.
func (r *Reservation) CommitBound() error {
	r.meter.mu.Lock()
	defer r.meter.mu.Unlock()
	if r.settled {
		return fmt.Errorf("commit %s call at its bound: %w", r.price.Model, ErrSettled)
	}
	r.settled = true
	r.meter.settle(r.amount, true, r.amount, 0, Usage{PromptTokens: r.prompt, CompletionTokens: r.completion})
	return nil
}

// Release frees the amount held without charging anything, for a call that
// was not made or was surely refused before any billing. It returns ErrSettled if
// the reservation was already settled.
func (r *Reservation) Release() error {
	r.meter.mu.Lock()
	defer r.meter.mu.Unlock()
	if r.settled {
		return fmt.Errorf("release %s call: %w", r.price.Model, ErrSettled)
	}
	r.settled = true
	r.meter.settle(r.amount, false, 0, 0, Usage{})
	return nil
}
