package batch

import (
	"context"
	"fmt"
	"math/rand/v2"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/runner-dev/runner/agent"
	"github.com/runner-dev/runner/internal/fakellm"
	"github.com/runner-dev/runner/sandbox"
	"github.com/runner-dev/runner/sandbox/inmem"
	"github.com/runner-dev/runner/tasks"
)

// The property a best-of-n task's budget exists for: whatever its attempts
// say, however many run at once and however the queue shares the run's
// budget, the attempts of a task together never spend more than the
// task's budget, nor all tasks more than the run's. The server counts the
// usage with the model's real tokenizer, as a real one does.
func TestAttemptsNeverPassTheTaskBudget(t *testing.T) {
	seed := uint64(time.Now().UnixNano())
	t.Logf("seed %d", seed)
	rng := rand.New(rand.NewPCG(seed, 15))
	exhausted := 0
	for round := range 5 {
		t.Run(fmt.Sprint("round ", round), func(t *testing.T) {
			exhausted += attemptsBudgetRound(t, rand.New(rand.NewPCG(rng.Uint64(), 15)))
		})
	}
	if exhausted == 0 {
		t.Errorf("no attempt ran out of budget: the caps were never put to the test")
	}
}

// attemptsBudgetRound runs a random queue of best-of-n tasks, checks
// every cap, and returns how many attempts ran out of budget.
func attemptsBudgetRound(t *testing.T, rng *rand.Rand) (exhausted int) {
	{
		r := newMemRun(t)
		var mu sync.Mutex
		r.backend.Exec = func(_ context.Context, _ *inmem.Sandbox, cmd string, _ sandbox.ExecOptions) (sandbox.ExecResult, error) {
			var n int
			fmt.Sscanf(cmd, "out %d", &n)
			out := strings.Repeat("data ", n/5)
			return sandbox.ExecResult{Stdout: out, Output: out}, nil
		}
		srv := fakellm.New(t)
		srv.Forever(fakellm.Func(func(req fakellm.Request) fakellm.Turn {
			mu.Lock()
			defer mu.Unlock()
			if len(req.Tools) == 0 {
				return fakellm.Text("Summary of the work so far.").WithTokenizerUsage("o200k_base")
			}
			if rng.IntN(12) == 0 {
				return complete.WithTokenizerUsage("o200k_base")
			}
			return runCommand(fmt.Sprintf("out %d", rng.IntN(8000))).WithTokenizerUsage("o200k_base")
		}))
		d := r.deps()
		d.NewModel = func(tasks.Task, *agent.Trajectory) (agent.Model, error) {
			return agent.NewOpenAI(agent.OpenAIConfig{BaseURL: srv.URL(), APIKey: "sk-batch-inmem-key-123456"})
		}
		var queue []tasks.Task
		for i := range 1 + rng.IntN(3) {
			task := r.task(fmt.Sprint("t", i))
			task.Model, task.MaxSteps = "gpt-4o-mini", 200
			task.Attempts = 2 + rng.IntN(4)
			task.BudgetUSD = 0.0005 + rng.Float64()*0.003
			stop := rng.IntN(2) == 0
			task.StopOnSuccess = &stop
			queue = append(queue, task)
		}
		opt := Options{Concurrency: 1 + rng.IntN(6), RunID: "inmem"}
		if rng.IntN(2) == 0 {
			opt.RunBudgetUSD = 0.001 + rng.Float64()*0.006
		}
		sum, err := Run(context.Background(), queue, opt, d)
		if err != nil {
			t.Fatal(err)
		}
		spentByTask := map[string]float64{}
		for _, line := range r.store.Results() {
			if line.Try > 0 {
				spentByTask[line.ID] += line.CostUSD
			}
			if line.Try > 0 && line.Status == tasks.StatusBudgetExhausted {
				exhausted++
			}
			if line.OverrunUSD > 0 {
				t.Errorf("%s attempt %d overran by $%v", line.ID, line.Try, line.OverrunUSD)
			}
		}
		for i, res := range sum.Results {
			task := queue[i]
			if len(res.Tries) != task.Attempts {
				t.Errorf("task %s sums up %d attempts, want %d", task.ID, len(res.Tries), task.Attempts)
			}
			if res.CostUSD > task.BudgetUSD || spentByTask[task.ID] > task.BudgetUSD*(1+1e-9) {
				t.Errorf("task %s spent $%v (its attempts' lines: $%v) of a $%v budget",
					task.ID, res.CostUSD, spentByTask[task.ID], task.BudgetUSD)
			}
		}
		if opt.RunBudgetUSD > 0 && sum.Spend.SpentUSD > opt.RunBudgetUSD {
			t.Errorf("the run spent $%v of $%v", sum.Spend.SpentUSD, opt.RunBudgetUSD)
		}
		for _, sb := range r.backend.Started() {
			if !sb.Closed() {
				t.Errorf("a sandbox was left open")
			}
		}
	}
	return exhausted
}
