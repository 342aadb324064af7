package budget

// Totals is a snapshot of a meter, in exact amounts. A parent meter's totals
// include those of its children.
type Totals struct {
	Cap      Nanodollars // 0: unlimited
	Spent    Nanodollars // charged by committed calls
	Reserved Nanodollars // held by calls not yet settled
	Usage    Usage       // tokens of committed calls
	Calls    int64       // committed calls
	// Overrun is what committed calls cost beyond what was reserved for
	// them, or beyond the completion limit they were granted (see
	// ErrOverrun): zero unless a server reported more usage than a call's
	// bound.
	Overrun Nanodollars
}

// Remaining returns what is left under the cap, never negative, and false
// if the meter is unlimited.
func (t Totals) Remaining() (Nanodollars, bool) {
	if t.Cap == 0 {
		return 0, false
	}
	return max(t.Cap-t.Spent-t.Reserved, 0), true
}

// Summary is a meter's snapshot for results files and progress output, in
// dollars. SpentNanodollars carries the exact amount, so summaries can be
// added without rounding.
type Summary struct {
	Calls int64 `json:"calls"`
	Usage
	SpentUSD         float64 `json:"spent_usd"`
	SpentNanodollars int64   `json:"spent_nanodollars"`
	ReservedUSD      float64 `json:"reserved_usd"`
	// CapUSD, RemainingUSD and CapShare are absent for an unlimited
	// meter. CapShare is the share of the cap spent, 0 to 1 (above 1 only
	// after an overrun).
	CapUSD       *float64 `json:"cap_usd,omitempty"`
	RemainingUSD *float64 `json:"remaining_usd,omitempty"`
	CapShare     *float64 `json:"cap_share,omitempty"`
	// Overrun is set when spending passed the cap, which only a server
	// ignoring the completion limit can cause.
	Overrun bool `json:"overrun,omitempty"`
	// OverrunUSD is what calls cost beyond what was reserved for them.
	OverrunUSD float64 `json:"overrun_usd,omitempty"`
}

// Summary converts the totals to dollars.
func (t Totals) Summary() Summary {
	s := Summary{
		Calls:            t.Calls,
		Usage:            t.Usage,
		SpentUSD:         t.Spent.USD(),
		SpentNanodollars: int64(t.Spent),
		ReservedUSD:      t.Reserved.USD(),
		OverrunUSD:       t.Overrun.USD(),
	}
	if left, capped := t.Remaining(); capped {
		c, r := t.Cap.USD(), left.USD()
		share := float64(t.Spent) / float64(t.Cap)
		s.CapUSD, s.RemainingUSD, s.CapShare = &c, &r, &share
		s.Overrun = t.Spent > t.Cap
	}
	return s
}
