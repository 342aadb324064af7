package budget

import (
	"errors"
	"testing"
)

// Spending carried over from an earlier run counts in the meter and its
// ancestors, and leaves only the rest of the cap to reserve.
func TestCarryCountsAgainstTheCaps(t *testing.T) {
	run := newMeter(t, 1, nil)
	task := newMeter(t, 0.01, run)
	if err := task.Carry(9_000_000, Usage{PromptTokens: 100, CompletionTokens: 10}, 2); err != nil {
		t.Fatal(err)
	}
	for name, m := range map[string]*Meter{"task": task, "run": run} {
		if tot := m.Totals(); tot.Spent != 9_000_000 || tot.Calls != 2 || tot.Usage.PromptTokens != 100 {
			t.Errorf("%s meter: %+v", name, tot)
		}
	}
	// $0.001 is left: 1,000 prompt tokens ($0.001) leave nothing for the reply.
	if _, err := task.Reserve(flat, 1_000, 100, 1); !errors.Is(err, ErrExhausted) {
		t.Errorf("Reserve beyond what the carried spending left: %v", err)
	}
	r, err := task.Reserve(flat, 500, 1_000, 1)
	if err != nil {
		t.Fatalf("Reserve within what is left: %v", err)
	}
	if got := r.CompletionTokens(); got != 250 {
		t.Errorf("granted %d completion tokens, want the 250 the $0.0005 left pays", got)
	}
	r.Release()
	if err := task.Carry(-1, Usage{}, 0); err == nil {
		t.Errorf("a negative amount was carried")
	}
}
