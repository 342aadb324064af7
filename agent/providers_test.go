package agent

import (
	"bytes"
	"context"
	"strings"
	"testing"
	"time"

	"github.com/runner-dev/runner/budget"
	"github.com/runner-dev/runner/internal/fakellm"
	"github.com/runner-dev/runner/internal/provider"
)

// fixturePrice is a price with round rates, so that the spend of a
// recording can be worked out by hand: $3, $0.30 and $15 per million
// input, cached and output tokens.
var fixturePrice = budget.Price{Model: "recorded-model", Rates: budget.Rates{Input: 3000, CachedInput: 300, Output: 15000}}

// recordedUsage is the usage each recorded reply reports, read off the
// recordings by hand (internal/fakellm/recordings): cached tokens from
// whichever field the provider uses, and the tokens a Gemini reply counts
// only in total_tokens (its thoughts) as completion tokens.
var recordedUsage = map[string][]budget.Usage{
	"openai":     {{PromptTokens: 91, CompletionTokens: 14}, {PromptTokens: 23, CompletionTokens: 14}},
	"gemini":     {{PromptTokens: 35, CompletionTokens: 109 - 35}, {PromptTokens: 66, CompletionTokens: 100 - 66}},
	"deepseek":   {{PromptTokens: 563, CachedTokens: 512, CompletionTokens: 116}, {PromptTokens: 875, CompletionTokens: 79}, {PromptTokens: 976, CachedTokens: 896, CompletionTokens: 61}},
	"mistral":    {{PromptTokens: 124, CompletionTokens: 22}, {PromptTokens: 31, CompletionTokens: 161}},
	"groq":       {{PromptTokens: 218, CompletionTokens: 15}, {PromptTokens: 17, CompletionTokens: 649}},
	"ollama":     {{PromptTokens: 206, CompletionTokens: 194}, {PromptTokens: 134, CompletionTokens: 122}},
	"openrouter": {{PromptTokens: 2572, CompletionTokens: 63}, {PromptTokens: 2649, CachedTokens: 2569, CompletionTokens: 100}, {PromptTokens: 41, CompletionTokens: 1457}},
	"vllm":       {{PromptTokens: 107, CompletionTokens: 16}},
	"anthropic":  {{PromptTokens: 2572, CompletionTokens: 63}, {PromptTokens: 2649, CompletionTokens: 100}},
}

// fixtureRun runs a task against the recorded replies of name, served under
// mode, with the model configured for provider.
func fixtureRun(t *testing.T, name string, mode fakellm.Mode, p provider.Name, meter *budget.Meter, maxCompletion int64) (Outcome, *fakellm.Server, []Event) {
	t.Helper()
	srv := fakellm.New(t, fakellm.Recordings(name)...)
	srv.SetMode(mode)
	m, err := NewOpenAI(OpenAIConfig{BaseURL: srv.URL(), APIKey: testKey, Provider: p,
		Sleep: func(ctx context.Context, _ time.Duration) error { return ctx.Err() }})
	if err != nil {
		t.Fatal(err)
	}
	var traj bytes.Buffer
	a := New(m, newMemSandbox(map[string]string{"README.md": "# Helo\n"}), Task{ID: name, Prompt: "Fix the typo in README.md."},
		Config{Model: "recorded-model", Price: fixturePrice, Meter: meter, MaxCompletionTokens: maxCompletion,
			Trajectory: NewTrajectory(&traj, testKey)})
	out := a.Run(context.Background())
	return out, srv, events(t, &traj)
}

// Every recorded provider: the task completes through the scripted server
// enforcing that provider's rules, no request is refused, and the spend is
// what the recorded usage says, cached tokens included.
func TestRecordedProvidersCompleteAndCostWhatTheyReport(t *testing.T) {
	modes := map[string]fakellm.Mode{
		"openai": fakellm.ModeOpenAI, "gemini": fakellm.ModeGemini, "deepseek": fakellm.ModeDeepSeek,
		"mistral": fakellm.ModeMistral, "groq": fakellm.ModeGroq, "ollama": fakellm.ModeOllama,
		"openrouter": fakellm.ModeOpenRouter, "vllm": fakellm.ModeVLLM, "anthropic": fakellm.ModeAnthropic,
	}
	for _, name := range fakellm.RecordedProviders() {
		t.Run(name, func(t *testing.T) {
			want, ok := recordedUsage[name]
			mode, hasMode := modes[name]
			if !ok || !hasMode {
				t.Fatalf("no expected usage or mode for the recordings of %s", name)
			}
			meter, _ := budget.NewMeter(5, nil)
			limit := int64(8192)
			if name == "ollama" {
				// Ollama's recorded replies are longer than this limit: the
				// server ignored it, as Ollama does.
				limit = 100
			}
			out, srv, evs := fixtureRun(t, name, mode, provider.Name(name), meter, limit)
			if out.Status != StatusCompleted {
				t.Fatalf("outcome = %+v, want completed", out)
			}
			if r := srv.Refusals(); len(r) > 0 {
				t.Errorf("the %s rules refused %d request(s), the first: %d %s", name, len(r), r[0].Status, r[0].Body)
			}
			var sum budget.Usage
			var cost budget.Nanodollars
			for _, u := range want {
				sum = sum.Add(u)
				cost += fixturePrice.Cost(u)
			}
			got := meter.Totals()
			if got.Usage != sum || got.Spent != cost || got.Calls != int64(len(want)) {
				t.Errorf("spent %s for %+v in %d calls, want %s for %+v in %d", got.Spent, got.Usage, got.Calls, cost, sum, len(want))
			}
			if got.Overrun != 0 {
				t.Errorf("overrun %s, want none", got.Overrun)
			}
			for _, e := range evs {
				if e.Type == EventResponse && e.UsageEstimated {
					t.Errorf("step %d: usage estimated, want the recorded usage", e.Step)
				}
			}
		})
	}
}

// The requests sent to each provider carry what it needs back and nothing
// it refuses: DeepSeek gets each reply's reasoning_content exactly as
// received, Ollama its reasoning, Gemini its thought signature; OpenAI,
// Mistral and Groq get neither reasoning nor extra_content.
func TestRecordedProvidersGetWhatTheyNeedBack(t *testing.T) {
	tests := []struct {
		name        string
		mode        fakellm.Mode
		wantInBody  []string
		notInBodies []string
	}{
		{"deepseek", fakellm.ModeDeepSeek, []string{`"reasoning_content":"The user wants to play a dice game.`, `"max_tokens":`},
			[]string{`"max_completion_tokens"`}},
		{"ollama", fakellm.ModeOllama, []string{`"reasoning":"The conversation: user asked`, `"max_tokens":100,`, `"max_completion_tokens":100,`}, nil},
		{"gemini", fakellm.ModeGemini, []string{`"extra_content":{"google":{"thought":true,"thought_signature":"AVSoXO4AzAXs7GGv`}, nil},
		{"openai", fakellm.ModeOpenAI, []string{`"max_completion_tokens":`}, []string{`"reasoning`, `"extra_content"`, `"max_tokens"`}},
		{"mistral", fakellm.ModeMistral, []string{`"max_tokens":`}, []string{`"reasoning`, `"extra_content"`, `"max_completion_tokens"`}},
		{"groq", fakellm.ModeGroq, []string{`"max_completion_tokens":`}, []string{`"reasoning`, `"extra_content"`}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			meter, _ := budget.NewMeter(0, nil)
			limit := int64(8192)
			if tt.name == "ollama" {
				limit = 100
			}
			out, srv, _ := fixtureRun(t, tt.name, tt.mode, provider.Name(tt.name), meter, limit)
			if out.Status != StatusCompleted {
				t.Fatalf("outcome = %+v", out)
			}
			reqs := srv.Requests()
			second := string(reqs[1].Body)
			for _, w := range tt.wantInBody {
				if !strings.Contains(second, w) {
					t.Errorf("the second request lacks %s:\n%s", w, second)
				}
			}
			for _, r := range reqs {
				for _, n := range tt.notInBodies {
					if strings.Contains(string(r.Body), n) {
						t.Errorf("a request carries %s:\n%s", n, r.Body)
					}
				}
			}
		})
	}
}
