package budget

import (
	"encoding/json"
	"errors"
	"sync"
	"testing"
)

// flat is $1 per million input tokens (1,000 nanodollars a token) and $2 per
// million output tokens, cached at half price.
var flat = Price{Model: "flat", Rates: Rates{Input: 1_000, CachedInput: 500, Output: 2_000}}

func newMeter(t *testing.T, capUSD float64, parent *Meter) *Meter {
	t.Helper()
	m, err := NewMeter(capUSD, parent)
	if err != nil {
		t.Fatalf("NewMeter(%v): %v", capUSD, err)
	}
	return m
}

func TestNewMeterRejectsBadCaps(t *testing.T) {
	for _, c := range []float64{-1, 1e-12, 1e12} {
		if _, err := NewMeter(c, nil); err == nil {
			t.Errorf("NewMeter(%v) accepted the cap", c)
		}
	}
}

func TestReserveClamps(t *testing.T) {
	tests := []struct {
		name          string
		capUSD        float64
		parentCapUSD  float64 // 0: no parent cap
		spentBefore   Usage   // committed first, at flat's price
		prompt        int64
		max, min      int64
		wantGranted   int64
		wantAmount    Nanodollars
		wantExhausted bool
	}{
		{name: "unlimited grants the max", prompt: 1_000, max: 4_096, min: 1,
			wantGranted: 4_096, wantAmount: 1_000*1_000 + 4_096*2_000},
		{name: "cap large enough", capUSD: 1, prompt: 1_000, max: 4_096, min: 1,
			wantGranted: 4_096, wantAmount: 1_000*1_000 + 4_096*2_000},
		// $0.01 = 10,000,000; prompt 1,000,000; left for output 9,000,000 / 2,000 = 4,500
		{name: "clamped by own cap", capUSD: 0.01, prompt: 1_000, max: 8_192, min: 1,
			wantGranted: 4_500, wantAmount: 10_000_000},
		{name: "clamped by parent cap", capUSD: 1, parentCapUSD: 0.01, prompt: 1_000, max: 8_192, min: 1,
			wantGranted: 4_500, wantAmount: 10_000_000},
		// left: 10,000,000 - (1,000*1,000 + 1,000*2,000) = 7,000,000; prompt 1,000,000; 6,000,000/2,000 = 3,000
		{name: "clamped after spending", capUSD: 0.01, spentBefore: Usage{PromptTokens: 1_000, CompletionTokens: 1_000},
			prompt: 1_000, max: 8_192, min: 1, wantGranted: 3_000, wantAmount: 7_000_000},
		// 1,000,000 + 2,000*2,001 = 5,002,000 > 5,000,000
		{name: "min does not fit", capUSD: 0.005, prompt: 1_000, max: 8_192, min: 2_001, wantExhausted: true},
		{name: "min exactly fits", capUSD: 0.005, prompt: 1_000, max: 8_192, min: 2_000,
			wantGranted: 2_000, wantAmount: 5_000_000},
		{name: "prompt alone does not fit", capUSD: 0.001, prompt: 1_001, max: 10, min: 1, wantExhausted: true},
		{name: "parent exhausted", capUSD: 1, parentCapUSD: 0.000001, prompt: 1, max: 10, min: 1, wantExhausted: true},
	}
	for _, tt := range tests {
		var parent *Meter
		if tt.parentCapUSD != 0 {
			parent = newMeter(t, tt.parentCapUSD, nil)
		}
		m := newMeter(t, tt.capUSD, parent)
		if tt.spentBefore != (Usage{}) {
			r, err := m.Reserve(flat, tt.spentBefore.PromptTokens, tt.spentBefore.CompletionTokens, tt.spentBefore.CompletionTokens)
			if err != nil {
				t.Fatalf("%s: setup reserve: %v", tt.name, err)
			}
			if err := r.Commit(tt.spentBefore); err != nil {
				t.Fatalf("%s: setup commit: %v", tt.name, err)
			}
		}
		before := m.Totals()
		r, err := m.Reserve(flat, tt.prompt, tt.max, tt.min)
		if tt.wantExhausted {
			if !errors.Is(err, ErrExhausted) {
				t.Errorf("%s: Reserve error = %v, want ErrExhausted", tt.name, err)
			}
			if after := m.Totals(); after != before {
				t.Errorf("%s: a refused reservation changed the meter: %+v -> %+v", tt.name, before, after)
			}
			continue
		}
		if err != nil {
			t.Errorf("%s: Reserve: %v", tt.name, err)
			continue
		}
		if got := r.CompletionTokens(); got != tt.wantGranted {
			t.Errorf("%s: granted %d completion tokens, want %d", tt.name, got, tt.wantGranted)
		}
		if got := r.Amount(); got != tt.wantAmount {
			t.Errorf("%s: amount %d, want %d", tt.name, got, tt.wantAmount)
		}
		if got := m.Totals().Reserved - before.Reserved; got != tt.wantAmount {
			t.Errorf("%s: meter holds %d more, want %d", tt.name, got, tt.wantAmount)
		}
		if parent != nil && parent.Totals().Reserved != m.Totals().Reserved {
			t.Errorf("%s: parent holds %d, child %d", tt.name, parent.Totals().Reserved, m.Totals().Reserved)
		}
	}
}

func TestReserveRejectsInvalidRequests(t *testing.T) {
	m := newMeter(t, 1, nil)
	for _, c := range []struct{ prompt, max, min int64 }{{-1, 10, 1}, {10, 10, 0}, {10, 5, 6}} {
		if _, err := m.Reserve(flat, c.prompt, c.max, c.min); err == nil || errors.Is(err, ErrExhausted) {
			t.Errorf("Reserve(%d, %d, %d) error = %v, want an invalid-request error", c.prompt, c.max, c.min, err)
		}
	}
	if m.Totals() != (Totals{Cap: 1_000_000_000}) {
		t.Errorf("invalid requests changed the meter: %+v", m.Totals())
	}
}

func TestCommitAndRelease(t *testing.T) {
	run := newMeter(t, 1, nil)
	task := newMeter(t, 0, run)

	r1, err := task.Reserve(flat, 2_000, 1_000, 1)
	if err != nil {
		t.Fatal(err)
	}
	used := Usage{PromptTokens: 1_500, CachedTokens: 500, CompletionTokens: 300}
	if err := r1.Commit(used); err != nil {
		t.Fatalf("Commit: %v", err)
	}
	wantCost := Nanodollars(1_000*1_000 + 500*500 + 300*2_000)
	for name, m := range map[string]*Meter{"task": task, "run": run} {
		got := m.Totals()
		if got.Spent != wantCost || got.Reserved != 0 || got.Usage != used || got.Calls != 1 {
			t.Errorf("%s after commit: %+v, want spent %d, reserved 0, usage %+v, 1 call", name, got, wantCost, used)
		}
	}
	if err := r1.Commit(used); !errors.Is(err, ErrSettled) {
		t.Errorf("second Commit error = %v, want ErrSettled", err)
	}
	if err := r1.Release(); !errors.Is(err, ErrSettled) {
		t.Errorf("Release after Commit error = %v, want ErrSettled", err)
	}

	r2, err := task.Reserve(flat, 2_000, 1_000, 1)
	if err != nil {
		t.Fatal(err)
	}
	if err := r2.Release(); err != nil {
		t.Fatalf("Release: %v", err)
	}
	if err := r2.Release(); !errors.Is(err, ErrSettled) {
		t.Errorf("second Release error = %v, want ErrSettled", err)
	}
	if err := r2.Commit(used); !errors.Is(err, ErrSettled) {
		t.Errorf("Commit after Release error = %v, want ErrSettled", err)
	}
	if got := run.Totals(); got.Spent != wantCost || got.Reserved != 0 || got.Calls != 1 {
		t.Errorf("run after release and repeats: %+v, want spent %d, nothing held, 1 call", got, wantCost)
	}
}

// TestCommitOverrun: a server that ignores the completion limit is charged
// in full, the overrun is reported, and nothing more can be reserved.
func TestCommitOverrun(t *testing.T) {
	m := newMeter(t, 0.01, nil) // 10,000,000
	r, err := m.Reserve(flat, 1_000, 8_192, 1)
	if err != nil {
		t.Fatal(err)
	}
	actual := Usage{PromptTokens: 1_000, CompletionTokens: r.CompletionTokens() + 1_000}
	err = r.Commit(actual)
	if !errors.Is(err, ErrOverrun) {
		t.Fatalf("Commit error = %v, want ErrOverrun", err)
	}
	want := flat.Cost(actual)
	s := m.Summary()
	if got := m.Totals().Spent; got != want {
		t.Errorf("spent %d, want the true cost %d", got, want)
	}
	if !s.Overrun || s.RemainingUSD == nil || *s.RemainingUSD != 0 {
		t.Errorf("summary = %+v, want overrun with 0 remaining", s)
	}
	if _, err := m.Reserve(flat, 0, 1, 1); !errors.Is(err, ErrExhausted) {
		t.Errorf("Reserve after overrun error = %v, want ErrExhausted", err)
	}
	if got := m.Totals().Overrun; got != want-r.Amount() {
		t.Errorf("overrun recorded %s, want %s", got, want-r.Amount())
	}
}

// TestCommitCompletionBeyondTheLimit: a reply with more completion tokens
// than were granted overruns even when the prompt's bound was loose enough
// that it cost less than the reservation; the excess is what the tokens
// beyond the limit cost. A free model has nothing to overrun.
func TestCommitCompletionBeyondTheLimit(t *testing.T) {
	m := newMeter(t, 1, nil)
	r, err := m.Reserve(flat, 100_000, 1_000, 1)
	if err != nil {
		t.Fatal(err)
	}
	actual := Usage{PromptTokens: 10, CompletionTokens: 1_500}
	if cost := flat.Cost(actual); cost >= r.Amount() {
		t.Fatalf("test arithmetic: the reply costs %s, not less than the %s reserved", cost, r.Amount())
	}
	err = r.Commit(actual)
	var over *OverrunError
	if !errors.Is(err, ErrOverrun) || !errors.As(err, &over) {
		t.Fatalf("Commit error = %v, want an *OverrunError", err)
	}
	want := flat.Cost(Usage{CompletionTokens: 500})
	if over.Excess != want || m.Totals().Overrun != want || over.Granted != 1_000 || over.Used != 1_500 {
		t.Errorf("overrun %+v, meter %s; want an excess of %s for 500 tokens beyond 1000", over, m.Totals().Overrun, want)
	}
	if got := m.Totals().Spent; got != flat.Cost(actual) {
		t.Errorf("spent %s, want the reply's cost %s", got, flat.Cost(actual))
	}

	free := newMeter(t, 1, nil)
	r, err = free.Reserve(Price{Model: "free"}, 10, 100, 1)
	if err != nil {
		t.Fatal(err)
	}
	if err := r.Commit(Usage{PromptTokens: 10, CompletionTokens: 5_000}); err != nil {
		t.Errorf("a free model's long reply: Commit error = %v, want none", err)
	}
}

// TestOverrunIsRecordedAndStopsTheTree: the cost beyond a reservation is
// recorded in the meter that charged it and in every ancestor, and no meter
// of the tree reserves again, capped or not: a server that does not keep to
// the bounds cannot be trusted with the next call.
func TestOverrunIsRecordedAndStopsTheTree(t *testing.T) {
	run := newMeter(t, 0, nil)
	task, sibling := newMeter(t, 0, run), newMeter(t, 5, run)
	r, err := task.Reserve(flat, 1_000, 100, 1)
	if err != nil {
		t.Fatal(err)
	}
	actual := Usage{PromptTokens: 1_000, CompletionTokens: 150}
	if err := r.Commit(actual); !errors.Is(err, ErrOverrun) {
		t.Fatalf("Commit error = %v, want ErrOverrun", err)
	}
	excess := flat.Cost(actual) - r.Amount() // 50 completion tokens at 2,000
	if excess != 100_000 {
		t.Fatalf("test arithmetic: excess %s", excess)
	}
	for name, m := range map[string]*Meter{"task": task, "run": run} {
		if got := m.Totals().Overrun; got != excess {
			t.Errorf("%s overrun = %s, want %s", name, got, excess)
		}
		if got := m.Summary().OverrunUSD; got != excess.USD() {
			t.Errorf("%s summary overrun_usd = %v, want %v", name, got, excess.USD())
		}
	}
	if got := sibling.Totals().Overrun; got != 0 {
		t.Errorf("sibling overrun = %s, want 0: it made no call", got)
	}
	// The sibling's cap rests on the same server: it is refused. The task
	// and the run have no cap, so no promise is at stake and calls go on.
	if _, err := sibling.Reserve(flat, 1, 1, 1); !errors.Is(err, ErrExhausted) || !errors.Is(err, ErrOverrun) {
		t.Errorf("sibling: Reserve after an overrun = %v, want ErrExhausted and ErrOverrun", err)
	}
	if got := run.Totals().Reserved; got != 0 {
		t.Errorf("refused reservations hold %s", got)
	}
	for name, m := range map[string]*Meter{"task": task, "run": run} {
		r, err := m.Reserve(flat, 1, 1, 1)
		if err != nil {
			t.Errorf("%s: Reserve without a cap after an overrun = %v, want it granted", name, err)
			continue
		}
		r.Release()
	}
	// Under a capped run, every task is refused, capped or not.
	cappedRun := newMeter(t, 10, nil)
	greedy, other := newMeter(t, 0, cappedRun), newMeter(t, 0, cappedRun)
	r, err = greedy.Reserve(flat, 1_000, 100, 1)
	if err != nil {
		t.Fatal(err)
	}
	if err := r.Commit(actual); !errors.Is(err, ErrOverrun) {
		t.Fatalf("Commit error = %v, want ErrOverrun", err)
	}
	for name, m := range map[string]*Meter{"greedy": greedy, "other": other, "run": cappedRun} {
		if _, err := m.Reserve(flat, 1, 1, 1); !errors.Is(err, ErrExhausted) || !errors.Is(err, ErrOverrun) {
			t.Errorf("capped run, %s: Reserve after an overrun = %v, want ErrExhausted and ErrOverrun", name, err)
		}
	}
}

// TestCommitBound charges exactly what was held, counting the bounds as the
// usage, in the meter and its ancestors.
func TestCommitBound(t *testing.T) {
	run := newMeter(t, 1, nil)
	task := newMeter(t, 0.5, run)
	r, err := task.Reserve(flat, 2_000, 1_000, 1)
	if err != nil {
		t.Fatal(err)
	}
	if err := r.CommitBound(); err != nil {
		t.Fatalf("CommitBound: %v", err)
	}
	want := Usage{PromptTokens: 2_000, CompletionTokens: 1_000}
	for name, m := range map[string]*Meter{"task": task, "run": run} {
		got := m.Totals()
		if got.Spent != r.Amount() || got.Reserved != 0 || got.Usage != want || got.Calls != 1 || got.Overrun != 0 {
			t.Errorf("%s after CommitBound: %+v, want spent %s, nothing held, usage %+v, 1 call, no overrun", name, got, r.Amount(), want)
		}
	}
	if err := r.CommitBound(); !errors.Is(err, ErrSettled) {
		t.Errorf("second CommitBound = %v, want ErrSettled", err)
	}
	if err := r.Release(); !errors.Is(err, ErrSettled) {
		t.Errorf("Release after CommitBound = %v, want ErrSettled", err)
	}
}

// TestLastDollarGoesOnce: many tasks race for a budget that pays exactly one
// call; exactly one gets it.
func TestLastDollarGoesOnce(t *testing.T) {
	run := newMeter(t, 0.000003, nil) // 3,000 = one call of 1 prompt token + 1 completion token
	const tasks = 64
	var wg sync.WaitGroup
	results := make(chan error, tasks)
	for range tasks {
		task := newMeter(t, 0, run)
		wg.Go(func() {
			r, err := task.Reserve(flat, 1, 1, 1)
			if err == nil {
				err = r.Commit(Usage{PromptTokens: 1, CompletionTokens: 1})
			}
			results <- err
		})
	}
	wg.Wait()
	close(results)
	granted := 0
	for err := range results {
		switch {
		case err == nil:
			granted++
		case !errors.Is(err, ErrExhausted):
			t.Errorf("unexpected error: %v", err)
		}
	}
	if granted != 1 {
		t.Errorf("%d tasks got the last call, want 1", granted)
	}
	if got := run.Totals(); got.Spent != 3_000 || got.Reserved != 0 {
		t.Errorf("run = %+v, want spent 3000, nothing held", got)
	}
}

func TestSummaryJSON(t *testing.T) {
	run := newMeter(t, 2, nil)
	r, err := run.Reserve(flat, 10_000, 1_000, 1)
	if err != nil {
		t.Fatal(err)
	}
	if err := r.Commit(Usage{PromptTokens: 10_000, CachedTokens: 2_000, CompletionTokens: 1_000}); err != nil {
		t.Fatal(err)
	}
	if _, err := run.Reserve(flat, 500, 100, 1); err != nil { // left pending
		t.Fatal(err)
	}
	got, err := json.Marshal(run.Summary())
	if err != nil {
		t.Fatal(err)
	}
	// spent: 8,000*1,000 + 2,000*500 + 1,000*2,000 = 11,000,000; held: 500*1,000 + 100*2,000 = 700,000
	want := `{"calls":1,"prompt_tokens":10000,"cached_tokens":2000,"completion_tokens":1000,` +
		`"spent_usd":0.011,"spent_nanodollars":11000000,"reserved_usd":0.0007,"cap_usd":2,"remaining_usd":1.9883,"cap_share":0.0055}`
	if string(got) != want {
		t.Errorf("summary JSON\n got %s\nwant %s", got, want)
	}

	unlimited, err := json.Marshal(newMeter(t, 0, nil).Summary())
	if err != nil {
		t.Fatal(err)
	}
	if want := `{"calls":0,"prompt_tokens":0,"cached_tokens":0,"completion_tokens":0,"spent_usd":0,"spent_nanodollars":0,"reserved_usd":0}`; string(unlimited) != want {
		t.Errorf("unlimited summary JSON\n got %s\nwant %s", unlimited, want)
	}
}

// TestReserveLeavingKeepsTheReserve: a call that fits only by using the
// reserve kept for the final call is refused until the caller asks without
// it; the grant leaves the reserve untouched in the tightest meter.
func TestReserveLeavingKeepsTheReserve(t *testing.T) {
	run := newMeter(t, 0.01, nil) // 10,000,000
	task := newMeter(t, 0, run)
	const keep = Nanodollars(3_000_000)
	// prompt 1,000,000 + 2,000 tokens out at 2,000 = 5,000,000: fits in 7,000,000.
	r, err := task.ReserveLeaving(keep, flat, 1_000, 8_192, 2_000)
	if err != nil {
		t.Fatalf("ReserveLeaving within the reserve: %v", err)
	}
	if got, want := r.CompletionTokens(), int64(3_000); got != want {
		t.Errorf("granted %d completion tokens, want %d (7,000,000 left beyond the reserve)", got, want)
	}
	if err := r.Commit(Usage{PromptTokens: 1_000, CompletionTokens: 2_000}); err != nil {
		t.Fatal(err)
	}
	// 5,000,000 left: a call of least 5,000,000 fits, but not beyond the reserve.
	if _, err := task.ReserveLeaving(keep, flat, 1_000, 8_192, 2_000); !errors.Is(err, ErrExhausted) {
		t.Fatalf("ReserveLeaving into the reserve: %v, want ErrExhausted", err)
	}
	if tot := run.Totals(); tot.Reserved != 0 {
		t.Errorf("a refused reservation held %s", tot.Reserved)
	}
	r, err = task.ReserveLeaving(0, flat, 1_000, 8_192, 2_000)
	if err != nil {
		t.Fatalf("the final call, with the reserve: %v", err)
	}
	if got := r.Amount(); got != 5_000_000 {
		t.Errorf("final call holds %s, want all of the 5,000,000 left", got)
	}
	r.Release()
	if _, err := task.ReserveLeaving(-1, flat, 1, 1, 1); err == nil || errors.Is(err, ErrExhausted) {
		t.Errorf("negative reserve: %v, want an invalid request", err)
	}
	unlimited := newMeter(t, 0, nil)
	if _, err := unlimited.ReserveLeaving(keep, flat, 1_000, 10, 1); err != nil {
		t.Errorf("an unlimited meter refused a call for its reserve: %v", err)
	}
}

func TestTightestCapAndAvailable(t *testing.T) {
	run := newMeter(t, 0.01, nil)
	tight := newMeter(t, 0.004, run)
	loose := newMeter(t, 0, run)
	free := newMeter(t, 0, nil)
	for _, tt := range []struct {
		name string
		m    *Meter
		want Nanodollars
	}{{"task cap under run cap", tight, 4_000_000}, {"no task cap", loose, 10_000_000}, {"none", free, 0}} {
		if got := tt.m.TightestCap(); got != tt.want {
			t.Errorf("%s: TightestCap = %s, want %s", tt.name, got, tt.want)
		}
		left, capped := tt.m.Available()
		if capped != (tt.want != 0) || left != tt.want {
			t.Errorf("%s: Available = %s, %v; want %s, %v", tt.name, left, capped, tt.want, tt.want != 0)
		}
	}
}
