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
	"github.com/runner-dev/runner/internal/fakellm"
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
	// The random tokenizer is any byte-level one, not the one the price
	// table names for an OpenAI model: the models are bounded by bytes
	// here (TestSpendWithRealTokenizerCounts covers the tokenizer bound).
	prices := []budget.Price{testPrice(t)}
	for _, name := range []string{"gpt-4.1", "claude-sonnet-4", "gemini-2.5-pro"} {
		if p, err := budget.DefaultPrices().Lookup(name); err == nil {
			prices = append(prices, p)
		}
	}
	for i := range prices {
		prices[i].Tokenizer = budget.TokenizerBytes
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

// propertyText makes n bytes of generated text of a shape: code, logs,
// prose, unicode or JSON.
func propertyText(rng *rand.Rand, shape string, n int) string {
	switch shape {
	case "code", "logs", "prose":
		return outputText(shape, rng.Uint64(), n)
	}
	var b strings.Builder
	for b.Len() < n {
		if shape == "unicode" {
			b.WriteString([]string{"漢字", "テスト", "é", "🙂", "\u2028", "Ω≈ç√", " ", "\n", "ß", "👩‍👩‍👧", "ok"}[rng.IntN(11)])
		} else {
			fmt.Fprintf(&b, `{"id":%d,"name":"item-%x","tags":["a","b"],"ok":%v,"score":%.3f},`+"\n",
				rng.IntN(1e6), rng.Uint32(), rng.IntN(2) == 0, rng.Float64())
		}
	}
	return b.String()
}

// With real tokenizer counts (the scripted server counts every request
// with o200k_base, as OpenAI's chat format does) on generated outputs of
// every shape, spending never passes the cap, whether runner knows the
// tokenizer or bounds by bytes; and where it knows it, a task that ran out
// of budget spent 95% of the cap or more. The caps are drawn so that one
// call costs a few percent of the cap at most: the share left at
// exhaustion is less than the cost of the call that did not fit.
func TestSpendWithRealTokenizerCounts(t *testing.T) {
	if testing.Short() {
		t.Skip("runs tasks to their caps")
	}
	seed := uint64(time.Now().UnixNano())
	t.Logf("seed %d", seed)
	rng := rand.New(rand.NewPCG(seed, 16))
	shapes := []string{"code", "logs", "prose", "unicode", "json"}
	for round := range 6 {
		tok := []budget.Tokenizer{budget.O200kBase, budget.TokenizerBytes}[round%2]
		shape := shapes[rng.IntN(len(shapes))]
		price := budget.Price{Model: "gpt-4o-mini", Tokenizer: tok,
			Rates: budget.Rates{Input: budget.Nanodollars(1 + rng.Int64N(10)), Output: budget.Nanodollars(1 + rng.Int64N(40))}}
		price.CachedInput = price.Input
		window := int64(16_000 + rng.IntN(16_000))
		// One call costs at most about window × input price; the cap pays
		// for 40 to 100 of them.
		capUSD := float64(window*int64(price.Input)*(40+rng.Int64N(60))) / budget.NanodollarsPerUSD
		taskRng := rand.New(rand.NewPCG(rng.Uint64(), 1))
		srv := fakellm.New(t)
		srv.Forever(fakellm.Func(func(req fakellm.Request) fakellm.Turn {
			if len(req.Tools) == 0 {
				return fakellm.Text("Summary of the work so far.").WithTokenizerUsage("o200k_base")
			}
			return fakellm.ToolCall("run_command", fmt.Sprintf(`{"command":"out %d"}`, taskRng.IntN(12_000))).
				WithTokenizerUsage("o200k_base")
		}))
		sb := newMemSandbox(nil)
		sb.exec = func(cmd string) (sandbox.ExecResult, error) {
			var n int
			fmt.Sscanf(cmd, "out %d", &n)
			out := propertyText(taskRng, shape, n)
			return sandbox.ExecResult{Stdout: out, Output: out}, nil
		}
		meter, _ := budget.NewMeter(capUSD, nil)
		a, traj := newTestAgent(t, srv, sb, Config{Meter: meter, Price: price, ContextWindow: window, MaxSteps: 400,
			MaxCompletionTokens: 512 + rng.Int64N(2048), FinalReserve: -1})
		out := a.Run(context.Background())
		tot := meter.Totals()
		share := float64(tot.Spent) / float64(tot.Cap)
		t.Logf("round %d: %s %s, cap $%.6f, window %d: %s after %d calls, %.2f%% of the cap",
			round, tok, shape, capUSD, window, out.Status, len(srv.Requests()), 100*share)
		if tot.Spent > tot.Cap || tot.Reserved != 0 || tot.Overrun != 0 {
			t.Errorf("round %d: spent %s (held %s, overrun %s) of a %s cap", round, tot.Spent, tot.Reserved, tot.Overrun, tot.Cap)
		}
		for _, e := range events(t, traj) {
			if e.Type == EventBound || (e.Type == EventResponse && e.PromptCountRatio > 1) {
				t.Errorf("round %d: the bound did not hold on a truthful server: %s (ratio %v)", round, e.Text, e.PromptCountRatio)
			}
		}
		switch {
		case out.Status == StatusBudgetExhausted && tok.Known() && share < 0.95:
			t.Errorf("round %d: ran out of budget at %.2f%% of the cap, want 95%% or more", round, 100*share)
		case out.Status != StatusBudgetExhausted && out.Status != StatusStepLimit:
			t.Errorf("round %d: outcome %s (%s)", round, out.Status, out.Error)
		}
	}
}
