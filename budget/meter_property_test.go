package budget

import (
	"errors"
	"flag"
	"math/rand/v2"
	"sync"
	"testing"
)

var seedFlag = flag.Uint64("budget.seed", 0, "seed of the randomized budget tests (0: random)")

func testSeed(t *testing.T) uint64 {
	seed := *seedFlag
	if seed == 0 {
		seed = rand.Uint64()
	}
	t.Logf("seed %d (rerun with -budget.seed=%d)", seed, seed)
	return seed
}

// checkMeter fails the test if the meter broke an invariant: amounts never
// negative, and, with a cap, spent plus held never above it.
func checkMeter(t *testing.T, what string, m *Meter) {
	t.Helper()
	tot := m.Totals()
	if tot.Spent < 0 || tot.Reserved < 0 || tot.Calls < 0 ||
		tot.Usage.PromptTokens < 0 || tot.Usage.CachedTokens < 0 || tot.Usage.CompletionTokens < 0 {
		t.Errorf("%s went negative: %+v", what, tot)
	}
	if tot.Cap != 0 && tot.Spent+tot.Reserved > tot.Cap {
		t.Errorf("%s passed its cap: spent %s + held %s > cap %s", what, tot.Spent, tot.Reserved, tot.Cap)
	}
}

type taskResult struct {
	meter *Meter
	spent Nanodollars // summed by the task from its own commits
	usage Usage
	calls int64
}

// TestCapsHoldUnderConcurrentTasks drives many randomized runs: several
// tasks, each with its own meter (capped or not) under a capped run meter,
// converse with random prompt sizes, prices, completion limits and actual
// usage within what was granted; some calls fail and are released. Every
// meter must stay within its cap and never go negative, at every step, and
// the run's totals must equal the sum of its tasks' exactly.
func TestCapsHoldUnderConcurrentTasks(t *testing.T) {
	seed := testSeed(t)
	for round := range uint64(150) {
		rng := rand.New(rand.NewPCG(seed, round))
		run := newMeter(t, float64(1+rng.IntN(2_000_000))/1e6, nil) // $0.000001 .. $2
		nTasks := 1 + rng.IntN(8)
		results := make([]taskResult, nTasks)
		var wg sync.WaitGroup
		for i := range nTasks {
			capUSD := 0.0
			if rng.IntN(3) > 0 {
				capUSD = float64(1+rng.IntN(1_000_000)) / 1e6
			}
			results[i].meter = newMeter(t, capUSD, run)
			taskRng := rand.New(rand.NewPCG(seed+1+uint64(i), round))
			wg.Go(func() { converse(t, taskRng, run, &results[i]) })
		}
		wg.Wait()

		var sumSpent Nanodollars
		var sumUsage Usage
		var sumCalls int64
		for i, r := range results {
			got := r.meter.Totals()
			if got.Spent != r.spent || got.Usage != r.usage || got.Calls != r.calls || got.Reserved != 0 {
				t.Errorf("round %d task %d: meter %+v, want spent %d, usage %+v, %d calls, nothing held",
					round, i, got, r.spent, r.usage, r.calls)
			}
			sumSpent += r.spent
			sumUsage = sumUsage.Add(r.usage)
			sumCalls += r.calls
		}
		got := run.Totals()
		if got.Spent != sumSpent || got.Usage != sumUsage || got.Calls != sumCalls || got.Reserved != 0 {
			t.Errorf("round %d run: %+v, want the tasks' sum: spent %d, usage %+v, %d calls, nothing held",
				round, got, sumSpent, sumUsage, sumCalls)
		}
		checkMeter(t, "run", run)
		if t.Failed() {
			return
		}
	}
}

// converse plays one task's conversation: a growing history, a call per
// turn, until the budget refuses or the task has made its calls.
func converse(t *testing.T, rng *rand.Rand, run *Meter, res *taskResult) {
	price := randomPrice(rng)
	history := []int{rng.IntN(4_000)} // system prompt and task, in bytes
	for range 40 {
		history = append(history, rng.IntN(3_000))
		promptBound := PromptUpperBound(history...)
		maxCompletion := 1 + rng.Int64N(16_384)
		minCompletion := 1 + rng.Int64N(min(maxCompletion, 512))
		r, err := res.meter.Reserve(price, promptBound, maxCompletion, minCompletion)
		if errors.Is(err, ErrExhausted) {
			history = history[:len(history)/2] // the agent compacts and tries a smaller call
			continue
		}
		if err != nil {
			t.Errorf("Reserve: %v", err)
			return
		}
		if g := r.CompletionTokens(); g < minCompletion || g > maxCompletion {
			t.Errorf("granted %d completion tokens, outside %d..%d", g, minCompletion, maxCompletion)
		}
		checkMeter(t, "task", res.meter)
		checkMeter(t, "run", run)
		if rng.IntN(10) == 0 { // the call failed before billing
			if err := r.Release(); err != nil {
				t.Errorf("Release: %v", err)
			}
			continue
		}
		u := Usage{
			PromptTokens:     rng.Int64N(promptBound + 1),
			CompletionTokens: rng.Int64N(r.CompletionTokens() + 1),
		}
		u.CachedTokens = rng.Int64N(u.PromptTokens + 1)
		if err := r.Commit(u); err != nil {
			t.Errorf("Commit(%+v) within the grant: %v", u, err)
		}
		res.spent += price.Cost(u)
		res.usage = res.usage.Add(u)
		res.calls++
		checkMeter(t, "task", res.meter)
		checkMeter(t, "run", run)
		history = append(history, int(u.CompletionTokens))
	}
}

// TestRunExhausts spends a run's budget with tasks that use every token they
// are granted, so nothing reserved is ever given back: the run must end with
// every task refused, less than one smallest call left, and no spending after
// the refusals.
func TestRunExhausts(t *testing.T) {
	seed := testSeed(t)
	rng := rand.New(rand.NewPCG(seed, 0))
	const promptBound, maxCompletion, minCompletion = 4_000, 2_000, 50
	price := randomPrice(rng)
	least := price.Bound(promptBound, minCompletion)
	for least == 0 { // a free model cannot exhaust anything
		price = randomPrice(rng)
		least = price.Bound(promptBound, minCompletion)
	}
	// room for 10 to 200 smallest calls, and a random remainder
	capUSD := (float64(least)*float64(10+rng.IntN(190)) + float64(rng.Int64N(int64(least)))) / NanodollarsPerUSD
	run := newMeter(t, capUSD, nil)

	const nTasks = 6
	var wg sync.WaitGroup
	tasks := make([]*Meter, nTasks)
	for i := range tasks {
		tasks[i] = newMeter(t, 0, run)
		wg.Go(func() {
			for {
				r, err := tasks[i].Reserve(price, promptBound, maxCompletion, minCompletion)
				if errors.Is(err, ErrExhausted) {
					return
				}
				if err != nil {
					t.Errorf("Reserve: %v", err)
					return
				}
				full := Usage{PromptTokens: promptBound, CompletionTokens: r.CompletionTokens()}
				if err := r.Commit(full); err != nil {
					t.Errorf("Commit: %v", err)
					return
				}
			}
		})
	}
	wg.Wait()

	final := run.Totals()
	if final.Calls == 0 {
		t.Fatalf("no call was made under a cap of %s at %+v per token", final.Cap, price.Rates)
	}
	if left, _ := final.Remaining(); left >= least {
		t.Errorf("tasks were refused with %s left, enough for a smallest call of %s", left, least)
	}
	for i, task := range tasks {
		if _, err := task.Reserve(price, promptBound, maxCompletion, minCompletion); !errors.Is(err, ErrExhausted) {
			t.Errorf("task %d: Reserve after exhaustion error = %v, want ErrExhausted", i, err)
		}
	}
	if after := run.Totals(); after != final {
		t.Errorf("spending changed after exhaustion: %+v -> %+v", final, after)
	}
	if final.Spent > final.Cap {
		t.Errorf("spent %s over the cap %s", final.Spent, final.Cap)
	}
}
