package agent

import (
	"context"
	"fmt"
	"math/rand/v2"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/runner-dev/runner/budget"
	"github.com/runner-dev/runner/internal/fakellm"
	"github.com/runner-dev/runner/sandbox"
)

// outputText makes about n bytes of tool output of one shape: code, logs
// or prose, different for every seed.
func outputText(shape string, seed uint64, n int) string {
	rng := rand.New(rand.NewPCG(seed, 11))
	words := []string{"the", "budget", "holds", "when", "every", "call", "is", "paid", "before", "it", "is", "made",
		"tokens", "server", "counted", "prompt", "reply", "limit", "reserve", "final"}
	var b strings.Builder
	for b.Len() < n {
		switch shape {
		case "code":
			fmt.Fprintf(&b, "func %s%d(ctx context.Context, n int) (int, error) {\n\tif n > %d {\n\t\treturn 0, fmt.Errorf(\"%s: %%w\", errTooMany)\n\t}\n\treturn n * %d, nil\n}\n\n",
				words[rng.IntN(len(words))], rng.IntN(1000), rng.IntN(100), words[rng.IntN(len(words))], rng.IntN(10))
		case "logs":
			fmt.Fprintf(&b, "2026-12-01T12:%02d:%02d.%03dZ INFO request id=%08x method=GET path=/v1/%s status=%d latency_ms=%d\n",
				rng.IntN(60), rng.IntN(60), rng.IntN(1000), rng.Uint32(), words[rng.IntN(len(words))], 200+rng.IntN(3)*100, rng.IntN(900))
		default: // prose
			b.WriteString(words[rng.IntN(len(words))])
			b.WriteString([]string{" ", " ", " ", ", ", ". ", ".\n\n"}[rng.IntN(6)])
		}
	}
	return b.String()[:n]
}

// e2ePrice is gpt-4o-mini's tokenizer at a price at which one call of a
// 64k window is a few percent of a $0.01 cap, as a call of gpt-4o-mini is
// of a $0.50 one: $0.005 and $0.02 per million tokens in and out.
func e2ePrice(tok budget.Tokenizer) budget.Price {
	return budget.Price{Model: "gpt-4o-mini", Rates: budget.Rates{Input: 5, CachedInput: 5, Output: 20}, Tokenizer: tok}
}

// runToExhaustion runs a task whose every step prints 20 kB of shape
// against the scripted server, which counts usage truthfully with
// o200k_base, until the $0.01 cap stops it. The agent bounds prompts with
// tok (bytes: the tokenizer unknown).
func runToExhaustion(t testing.TB, shape string, tok budget.Tokenizer) (Outcome, []fakellm.Request) {
	return runToExhaustionAt(t, shape, e2ePrice(tok), 0)
}

// runToExhaustionAt is runToExhaustion at a price and a final reserve
// (agent.Config.FinalReserve).
func runToExhaustionAt(t testing.TB, shape string, price budget.Price, finalReserve float64) (Outcome, []fakellm.Request) {
	srv := fakellm.New(t)
	srv.Forever(fakellm.Func(func(req fakellm.Request) fakellm.Turn {
		if len(req.Tools) == 0 {
			return fakellm.Text("Summary: read the outputs, found nothing to change yet.").WithTokenizerUsage("o200k_base")
		}
		return fakellm.ToolCall("run_command", `{"command":"cat out.txt"}`).WithTokenizerUsage("o200k_base")
	}))
	sb := newMemSandbox(nil)
	var n atomic.Uint64
	sb.exec = func(string) (sandbox.ExecResult, error) {
		out := outputText(shape, n.Add(1), 20_000)
		return sandbox.ExecResult{Stdout: out, Output: out}, nil
	}
	meter, _ := budget.NewMeter(0.01, nil)
	a, _ := newTestAgent(t, srv, sb, Config{Meter: meter, Price: price, ContextWindow: 64_000,
		MaxToolOutput: 24 << 10, MaxSteps: 1000, MaxCompletionTokens: 1024, FinalReserve: finalReserve})
	return a.Run(context.Background()), srv.Requests()
}

// End to end against the scripted server with truthful usage and 20 kB
// tool outputs: with the tokenizer known the task stops at 95% of a $0.01
// cap or more, never above it; with bytes it never passes the cap either.
func TestSpendReachesTheCapWithTruthfulUsage(t *testing.T) {
	if testing.Short() {
		t.Skip("runs tasks to a $0.01 cap")
	}
	for _, tok := range []budget.Tokenizer{budget.O200kBase, budget.TokenizerBytes} {
		out, reqs := runToExhaustion(t, "code", tok)
		if out.Status != StatusBudgetExhausted {
			t.Fatalf("%s: outcome %s (%s) after %d calls, want budget_exhausted", tok, out.Status, out.Error, len(reqs))
		}
		s := out.Spend
		if s.CapShare == nil || s.SpentUSD > 0.01 || *s.CapShare > 1 || s.Overrun {
			t.Errorf("%s: spent $%v of $0.01 (overrun %v)", tok, s.SpentUSD, s.Overrun)
		}
		t.Logf("%s: %d calls, spent $%.6f, %.2f%% of the cap", tok, len(reqs), s.SpentUSD, 100**s.CapShare)
		if tok.Known() && *s.CapShare < 0.95 {
			t.Errorf("%s: spent %.2f%% of the cap at exhaustion, want 95%% or more", tok, 100**s.CapShare)
		}
	}
}

// BenchmarkCapShareAtExhaustion runs tasks printing 20 kB of code, logs or
// prose a step to a $0.01 cap against the truthful server and reports the
// share of the cap spent when the budget ran out: before (bytes bound
// every message, no final reserve) and after (the tokenizer, the default
// reserve), at two prices: one at which a call is a few percent of the cap
// ("small calls"), and gpt-4o-mini's, at which one call is up to a third.
// One iteration is one task; run with -benchtime 1x.
func BenchmarkCapShareAtExhaustion(b *testing.B) {
	mini, err := budget.DefaultPrices().Lookup("gpt-4o-mini")
	if err != nil {
		b.Fatal(err)
	}
	for _, at := range []struct {
		name  string
		price budget.Price
	}{{"small_calls", e2ePrice(budget.O200kBase)}, {"gpt-4o-mini", mini}} {
		for _, shape := range []string{"code", "logs", "prose"} {
			for _, impl := range []string{"before", "after"} {
				b.Run(fmt.Sprintf("price=%s/shape=%s/impl=%s", at.name, shape, impl), func(b *testing.B) {
					price, reserve := at.price, 0.0
					if impl == "before" {
						price.Tokenizer, reserve = budget.TokenizerBytes, -1
					}
					var share, calls float64
					for b.Loop() {
						out, reqs := runToExhaustionAt(b, shape, price, reserve)
						if out.Status != StatusBudgetExhausted || out.Spend.CapShare == nil {
							b.Fatalf("outcome %s (%s)", out.Status, out.Error)
						}
						share, calls = *out.Spend.CapShare, float64(len(reqs))
					}
					b.ReportMetric(100*share, "%cap")
					b.ReportMetric(calls, "calls")
				})
			}
		}
	}
}

// BenchmarkBoundCost compares, for one step that added a 20 kB tool
// output, the host-side cost of bounding it (the tokenizer; bytes) with
// the rest of the host-side work of the call: encoding a request of 20
// such steps, sending it to the local scripted server and decoding the
// reply (the server's own work included, which only makes the call
// dearer).
func BenchmarkBoundCost(b *testing.B) {
	for _, shape := range []string{"code", "logs", "prose"} {
		var seed atomic.Uint64
		msg := func() Message {
			return Message{Role: RoleTool, ToolCallID: "call_1", Name: "run_command", Content: outputText(shape, seed.Add(1), 20_000)}
		}
		b.Run("shape="+shape+"/impl=tokenizer", func(b *testing.B) {
			bounds := newPromptBounds(budget.O200kBase)
			bounds.trusted = true
			bounds.byTokenizer(msg()) // loads the vocabulary
			for b.Loop() {
				b.StopTimer()
				m := msg() // a new message each time: nothing cached
				b.StartTimer()
				bounds.byTokenizer(m)
			}
		})
		b.Run("shape="+shape+"/impl=bytes", func(b *testing.B) {
			bounds := newPromptBounds(budget.TokenizerBytes)
			for b.Loop() {
				b.StopTimer()
				m := msg()
				b.StartTimer()
				bounds.message(m)
			}
		})
		b.Run("shape="+shape+"/impl=call", func(b *testing.B) {
			srv := fakellm.New(b)
			srv.Forever(fakellm.ToolCall("run_command", `{"command":"ls"}`).WithUsage(60_000, 10, 0))
			model, err := NewOpenAI(OpenAIConfig{BaseURL: srv.URL(), APIKey: testKey, MaxRetries: 0})
			if err != nil {
				b.Fatal(err)
			}
			history := []Message{{Role: RoleSystem, Content: "system"}, {Role: RoleUser, Content: "task"}}
			for i := range 20 {
				id := fmt.Sprint("call_", i)
				m := msg()
				m.ToolCallID = id
				history = append(history, Message{Role: RoleAssistant,
					ToolCalls: []ToolCall{{ID: id, Name: "run_command", Arguments: `{"command":"cat out.txt"}`}}}, m)
			}
			for b.Loop() {
				if _, err := model.Complete(context.Background(), Request{Model: "gpt-4o-mini", Messages: history, MaxCompletionTokens: 256,
					Tools: []ToolSpec{(runCommand{}).Spec()}}); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
