package agent

import (
	"context"
	"encoding/json"
	"fmt"
	"hash/fnv"
	"math/rand/v2"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/runner-dev/runner/budget"
	"github.com/runner-dev/runner/sandbox"
)

// randomModel answers with random tool calls and random usage that a real
// server could report. Its tokenizer is random but, like a real one,
// deterministic: a message's tokens (at most its bytes, since a token is at
// least a byte, plus up to 16 of framing) are the same in every request, so
// the exact count reported for a prefix stays true. Completion tokens are at
// most the limit asked for.
type randomModel struct {
	mu       sync.Mutex
	rng      *rand.Rand
	overhead int64 // the provider's per-request tokens, at most 1024
}

// tokens is the random tokenizer: bytes divided by 1 to 6, plus framing,
// both chosen by a hash of the text.
func tokens(text []byte) int64 {
	h := fnv.New32a()
	h.Write(text)
	v := h.Sum32()
	return int64(len(text))/int64(1+v%6) + int64(v>>8%17)
}

func (m *randomModel) Complete(ctx context.Context, req Request) (Response, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	prompt := m.overhead
	for _, msg := range req.Messages {
		b, _ := json.Marshal(wireMessage(msg))
		prompt += tokens(b)
	}
	for _, t := range req.Tools {
		b, _ := json.Marshal(t)
		prompt += tokens(b)
	}
	usage := Usage{
		PromptTokens:     prompt,
		CompletionTokens: 1 + m.rng.Int64N(req.MaxCompletionTokens),
	}
	usage.CachedTokens = m.rng.Int64N(usage.PromptTokens + 1)
	var call ToolCall
	switch r := m.rng.IntN(10); {
	case len(req.Tools) == 0:
		return Response{Message: Message{Role: RoleAssistant, Content: "summary"}, Usage: usage}, nil
	case r == 0:
		call = ToolCall{ID: "c", Name: "complete", Arguments: `{"summary":"done"}`}
	default:
		call = ToolCall{ID: fmt.Sprint("c", m.rng.Int()), Name: "run_command",
			Arguments: fmt.Sprintf(`{"command":"out %d"}`, m.rng.IntN(20000))}
	}
	return Response{Message: Message{Role: RoleAssistant, ToolCalls: []ToolCall{call}}, Usage: usage,
		FinishReason: FinishToolCalls}, nil
}

// The property the budget exists for: whatever the conversations, the
// usage reported and the number of tasks sharing the run's meter, spending
// never passes a cap.
func TestSpendNeverPassesTheCap(t *testing.T) {
	seed := uint64(time.Now().UnixNano())
	t.Logf("seed %d", seed)
	rng := rand.New(rand.NewPCG(seed, 7))
	prices := []budget.Price{testPrice(t)}
	for _, name := range []string{"gpt-4.1", "claude-sonnet-4", "gemini-2.5-pro"} {
		if p, err := budget.DefaultPrices().Lookup(name); err == nil {
			prices = append(prices, p)
		}
	}
	for round := 0; round < 40; round++ {
		runCap := 0.005 + rng.Float64()*0.05
		run, _ := budget.NewMeter(runCap, nil)
		tasks := 1 + rng.IntN(6)
		price := prices[rng.IntN(len(prices))]
		var wg sync.WaitGroup
		meters := make([]*budget.Meter, tasks)
		caps := make([]float64, tasks)
		for i := range tasks {
			caps[i] = 0.001 + rng.Float64()*0.02
			meters[i], _ = budget.NewMeter(caps[i], run)
			sb := newMemSandbox(nil)
			sb.exec = func(cmd string) (sandbox.ExecResult, error) {
				var n int
				fmt.Sscanf(cmd, "out %d", &n)
				return sandbox.ExecResult{Output: strings.Repeat("y", n)}, nil
			}
			model := &randomModel{rng: rand.New(rand.NewPCG(rng.Uint64(), uint64(i))), overhead: rng.Int64N(1025)}
			cfg := Config{
				Model: price.Model, Price: price, Meter: meters[i], MaxSteps: 60,
				MaxCompletionTokens: 500 + rng.Int64N(8000), ContextWindow: 8000 + rng.Int64N(60000),
			}
			wg.Add(1)
			go func() {
				defer wg.Done()
				out := New(model, sb, Task{ID: fmt.Sprint(i), Prompt: "work"}, cfg).Run(context.Background())
				switch out.Status {
				case StatusCompleted, StatusBudgetExhausted, StatusStepLimit:
				default:
					t.Errorf("round %d task %d: unexpected outcome %+v", round, i, out)
				}
			}()
		}
		wg.Wait()
		for i, m := range meters {
			if tot := m.Totals(); tot.Spent.USD() > caps[i] || tot.Reserved != 0 {
				t.Errorf("round %d task %d: spent $%v (held %s) of a $%v cap", round, i, tot.Spent.USD(), tot.Reserved, caps[i])
			}
		}
		if tot := run.Totals(); tot.Spent.USD() > runCap || tot.Reserved != 0 {
			t.Errorf("round %d: the run spent $%v (held %s) of a $%v cap", round, tot.Spent.USD(), tot.Reserved, runCap)
		}
	}
}
