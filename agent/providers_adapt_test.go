package agent

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/runner-dev/runner/budget"
	"github.com/runner-dev/runner/internal/fakellm"
	"github.com/runner-dev/runner/internal/provider"
	"github.com/runner-dev/runner/sandbox"
)

// adaptLog collects the changes a model makes to its request rules.
type adaptLog struct {
	mu    sync.Mutex
	notes []string
}

func (l *adaptLog) add(note string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.notes = append(l.notes, note)
}

func (l *adaptLog) all() []string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return append([]string(nil), l.notes...)
}

func providerModel(t *testing.T, srv *fakellm.Server, p provider.Name, learned *Adaptations, log *adaptLog) *OpenAIModel {
	t.Helper()
	m, err := NewOpenAI(OpenAIConfig{BaseURL: srv.URL(), APIKey: testKey, Provider: p, Adaptations: learned, OnAdapt: log.add,
		Sleep: func(ctx context.Context, _ time.Duration) error { return ctx.Err() }})
	if err != nil {
		t.Fatal(err)
	}
	return m
}

func runWith(t *testing.T, m Model, meter *budget.Meter) Outcome {
	t.Helper()
	a := New(m, newMemSandbox(map[string]string{"README.md": "# Helo\n"}), Task{ID: "t", Prompt: "Fix the typo."},
		Config{Model: "recorded-model", Price: fixturePrice, Meter: meter})
	return a.Run(context.Background())
}

// A server of unknown kind that refuses max_completion_tokens (Mistral's
// 422) is answered once by sending max_tokens, and the run remembers it:
// the next task's model, sharing the run's Adaptations, sends max_tokens
// from its first request. The refused attempt costs nothing.
func TestRefusedCompletionLimitFieldFallsBackOnceForTheRun(t *testing.T) {
	srv := fakellm.New(t, fakellm.Recordings("mistral")...)
	srv.SetMode(fakellm.ModeMistral)
	learned, log := &Adaptations{}, &adaptLog{}
	meter, _ := budget.NewMeter(5, nil)
	if out := runWith(t, providerModel(t, srv, provider.Auto, learned, log), meter); out.Status != StatusCompleted {
		t.Fatalf("outcome = %+v", out)
	}
	refusals := srv.Refusals()
	if len(refusals) != 1 || refusals[0].Status != http.StatusUnprocessableEntity || refusals[0].Request != 1 {
		t.Fatalf("refusals = %+v, want the first request's 422 only", refusals)
	}
	if notes := log.all(); len(notes) != 1 || !strings.Contains(notes[0], "max_tokens") {
		t.Errorf("adaptations = %q, want one naming max_tokens", notes)
	}
	want := fixturePrice.Cost(budget.Usage{PromptTokens: 124, CompletionTokens: 22}) + fixturePrice.Cost(budget.Usage{PromptTokens: 31, CompletionTokens: 161})
	if got := meter.Totals(); got.Spent != want || got.Calls != 2 {
		t.Errorf("spent %s in %d calls, want %s in 2: the refused attempt is free", got.Spent, got.Calls, want)
	}

	srv.Add(fakellm.Recordings("mistral")...)
	if out := runWith(t, providerModel(t, srv, provider.Auto, learned, log), meter); out.Status != StatusCompleted {
		t.Fatalf("second task: %+v", out)
	}
	if n := len(srv.Refusals()); n != 1 {
		t.Errorf("%d refusals after the second task, want still 1", n)
	}
}

// A server that says the reasoning is missing (DeepSeek's thinking mode)
// gets it back, exactly as it sent it; one that refuses reasoning on a
// message (Mistral, after refusing max_completion_tokens) no longer gets
// it.
func TestReasoningRoundTripAdaptsToTheServer(t *testing.T) {
	t.Run("missing", func(t *testing.T) {
		srv := fakellm.New(t, fakellm.Recordings("deepseek")...)
		srv.SetMode(fakellm.ModeDeepSeek)
		log := &adaptLog{}
		if out := runWith(t, providerModel(t, srv, provider.Auto, &Adaptations{}, log), nil); out.Status != StatusCompleted {
			t.Fatalf("outcome = %+v", out)
		}
		r := srv.Refusals()
		if len(r) != 1 || !strings.Contains(r[0].Body, "Missing `reasoning_content`") {
			t.Fatalf("refusals = %+v, want one for the missing reasoning", r)
		}
		if notes := log.all(); len(notes) != 1 || !strings.Contains(notes[0], "reasoning_content") {
			t.Errorf("adaptations = %q", notes)
		}
	})
	t.Run("refused", func(t *testing.T) {
		srv := fakellm.New(t, fakellm.Recordings("ollama")...)
		srv.SetMode(fakellm.ModeMistral)
		log := &adaptLog{}
		// The Ollama profile sends both limits and reasoning back; this
		// server refuses both.
		if out := runWith(t, providerModel(t, srv, provider.Ollama, &Adaptations{}, log), nil); out.Status != StatusCompleted {
			t.Fatalf("outcome = %+v", out)
		}
		r := srv.Refusals()
		// Ollama's call id does not have the shape Mistral wants either.
		if len(r) != 3 || !strings.Contains(r[0].Body, `"max_completion_tokens"`) || !strings.Contains(r[1].Body, `"reasoning"`) ||
			!strings.Contains(r[2].Body, "Tool call id was call_o2vnpxrw") {
			t.Fatalf("refusals = %+v, want Mistral's refusals of max_completion_tokens, reasoning and the call id", r)
		}
		if notes := log.all(); !strings.Contains(strings.Join(notes, "\n"), "no longer sending reasoning back") {
			t.Errorf("adaptations = %q", notes)
		}
	})
}

// An adaptation is made once: a server that refuses again after it is a
// refusal like any other, and the call fails.
func TestAdaptationIsMadeOnce(t *testing.T) {
	refuse := fakellm.APIError(http.StatusBadRequest, "invalid_request_error", "unsupported_parameter",
		"Unsupported parameter: 'max_tokens' is not supported with this model. Use 'max_completion_tokens' instead.")
	srv := fakellm.New(t, refuse, refuse)
	srv.SetMode(fakellm.ModeVLLM)
	log := &adaptLog{}
	m := providerModel(t, srv, provider.VLLM, &Adaptations{}, log) // sends both limits
	req := userRequest("hi")
	req.MaxCompletionTokens = 100
	_, err := m.Complete(context.Background(), req)
	var me *ModelError
	if !errors.As(err, &me) || me.StatusCode != http.StatusBadRequest {
		t.Fatalf("Complete error = %v, want the second refusal", err)
	}
	reqs := srv.Requests()
	if len(reqs) != 2 || reqs[0].MaxTokens == nil || reqs[1].MaxTokens != nil || reqs[1].MaxCompletionTokens == nil {
		t.Errorf("requests sent max_tokens %v then %v, want it dropped once", reqs[0].MaxTokens, reqs[1].MaxTokens)
	}
	if notes := log.all(); len(notes) != 1 {
		t.Errorf("adaptations = %q, want one", notes)
	}
}

// A value the server finds too large is not a field it refuses: no
// adaptation, the refusal stands.
func TestValueErrorsAreNotAdapted(t *testing.T) {
	srv := fakellm.New(t, fakellm.APIError(http.StatusBadRequest, "invalid_request_error", "",
		"max_tokens is too large: 8192. This model supports at most 4096 completion tokens, whereas you provided 8192."))
	log := &adaptLog{}
	m := providerModel(t, srv, provider.Mistral, &Adaptations{}, log)
	req := userRequest("hi")
	req.MaxCompletionTokens = 8192
	if _, err := m.Complete(context.Background(), req); err == nil {
		t.Fatal("Complete succeeded")
	}
	if n := len(srv.Requests()); n != 1 || len(log.all()) != 0 {
		t.Errorf("%d requests, adaptations %q; want 1 and none", n, log.all())
	}
}

// Gemini 3's shape: a tool call without an id, its thought signature on
// the call, finish_reason "stop". The call runs, gets an id, and its
// signature goes back with it, byte for byte.
func TestGeminiThoughtSignatureOnTheCallGoesBack(t *testing.T) {
	// The shape of openai-php/client#768 (extra_content.google on the
	// call) with the missing id of dotnet/extensions#6380 and the finish
	// reason of BerriAI/litellm#12481.
	signed := `{"choices":[{"finish_reason":"stop","index":0,"message":{"role":"assistant","tool_calls":[` +
		`{"extra_content":{"google":{"thought_signature":"EjQKMgFyZWNvcmRlZCBzaWduYXR1cmU="}},"function":{"arguments":"{}","name":"list_files"},"type":"function"}]}}],` +
		`"created":1764000000,"id":null,"model":"gemini-3-flash-preview","object":"chat.completion","usage":{"completion_tokens":10,"prompt_tokens":100,"total_tokens":150}}`
	srv := fakellm.New(t, fakellm.Recorded(signed), fakellm.Text("done").WithUsage(200, 5, 0))
	srv.SetMode(fakellm.ModeGemini)
	meter, _ := budget.NewMeter(0, nil)
	if out := runWith(t, providerModel(t, srv, provider.Gemini, &Adaptations{}, &adaptLog{}), meter); out.Status != StatusCompleted {
		t.Fatalf("outcome = %+v", out)
	}
	if r := srv.Refusals(); len(r) > 0 {
		t.Fatalf("refused: %+v", r)
	}
	if !strings.Contains(string(srv.Requests()[1].Body), `"extra_content":{"google":{"thought_signature":"EjQKMgFyZWNvcmRlZCBzaWduYXR1cmU="}}`) {
		t.Errorf("the signature did not go back:\n%s", srv.Requests()[1].Body)
	}
	// total_tokens counts 40 tokens of thoughts beyond prompt and completion.
	if got := meter.Totals().Usage.CompletionTokens; got != 50+5 {
		t.Errorf("completion tokens charged %d, want 55", got)
	}
}

// Compaction never separates a reply's reasoning or signature from its
// tool calls: under DeepSeek's and Gemini's rules, every request after the
// history was compacted still carries, on each assistant message it kept,
// what that reply came with.
func TestCompactionKeepsReasoningWithItsCalls(t *testing.T) {
	for _, tt := range []struct {
		mode fakellm.Mode
		p    provider.Name
	}{{fakellm.ModeDeepSeek, provider.DeepSeek}, {fakellm.ModeGemini, provider.Gemini}} {
		t.Run(string(tt.p), func(t *testing.T) {
			sb := newMemSandbox(nil)
			sb.exec = func(cmd string) (sandbox.ExecResult, error) {
				return sandbox.ExecResult{Output: cmd + "\n" + strings.Repeat("data ", 400)}, nil
			}
			var mu sync.Mutex
			n := 0
			srv := fakellm.New(t)
			srv.SetMode(tt.mode)
			srv.Forever(fakellm.Func(func(r fakellm.Request) fakellm.Turn {
				mu.Lock()
				defer mu.Unlock()
				prompt := int64(len(r.Body)) / 4
				if len(r.Tools) == 0 {
					return fakellm.Text("Summary: ran commands.").WithUsage(prompt, 40, 0)
				}
				n++
				if n > 40 {
					return fakellm.Text("all done").WithUsage(prompt, 20, 0)
				}
				return fakellm.Recorded(fmt.Sprintf(`{"object":"chat.completion","model":"m","choices":[{"index":0,"finish_reason":"tool_calls","message":{"role":"assistant",`+
					`"reasoning_content":"step %d: read the next part","tool_calls":[{"id":"call_%d","type":"function","function":{"name":"run_command","arguments":"{\"command\":\"cat part-%d\"}"},`+
					`"extra_content":{"google":{"thought_signature":"c2lnLTxk%d"}}}]}}],"usage":{"prompt_tokens":%d,"completion_tokens":30}}`, n, n, n, n, prompt))
			}))
			m := providerModel(t, srv, tt.p, &Adaptations{}, &adaptLog{})
			a := New(m, sb, Task{ID: "t", Prompt: "Read every part."}, Config{Model: "m", Price: fixturePrice,
				ContextWindow: 20000, MaxSteps: 200})
			out := a.Run(context.Background())
			if out.Status != StatusCompleted || out.Compactions == 0 {
				t.Fatalf("outcome = %+v, want completed after compactions", out)
			}
			if r := srv.Refusals(); len(r) > 0 {
				t.Fatalf("%d requests refused, the first: %s", len(r), r[0].Body)
			}
		})
	}
}

// For a provider that does not keep to the reply limit (Ollama), the limit
// is still sent, but each call reserves a reply as long as the context
// window, all or nothing; a reply past even that is an overrun.
func TestCapIgnoringProviderReservesTheWindow(t *testing.T) {
	const window = 20000
	t.Run("reserved", func(t *testing.T) {
		srv := fakellm.New(t, fakellm.Text("done").WithUsage(300, 5000, 0))
		srv.SetMode(fakellm.ModeOllama)
		m := providerModel(t, srv, provider.Ollama, &Adaptations{}, &adaptLog{})
		var traj strings.Builder
		a := New(m, newMemSandbox(nil), Task{ID: "t", Prompt: "Go."}, Config{Model: "m", Price: fixturePrice,
			ContextWindow: window, MaxCompletionTokens: 1000, Trajectory: NewTrajectory(&traj, testKey)})
		if out := a.Run(context.Background()); out.Status != StatusCompleted {
			t.Fatalf("outcome = %+v", out)
		}
		r := srv.Requests()[0]
		if r.MaxTokens == nil || *r.MaxTokens != 1000 || r.MaxCompletionTokens == nil || *r.MaxCompletionTokens != 1000 {
			t.Errorf("limits sent: max_tokens %v, max_completion_tokens %v; want 1000 in both", r.MaxTokens, r.MaxCompletionTokens)
		}
		for _, line := range strings.Split(traj.String(), "\n") {
			if strings.Contains(line, `"type":"request"`) {
				var e struct {
					PromptBound int64   `json:"prompt_bound"`
					Reserved    float64 `json:"reserved_usd"`
				}
				if err := json.Unmarshal([]byte(line), &e); err != nil {
					t.Fatal(err)
				}
				if want := fixturePrice.Bound(e.PromptBound, window).USD(); e.Reserved != want {
					t.Errorf("reserved $%v, want $%v: the prompt bound and a whole window of reply", e.Reserved, want)
				}
			}
		}
	})
	t.Run("budget too small for the window", func(t *testing.T) {
		srv := fakellm.New(t)
		m := providerModel(t, srv, provider.Ollama, &Adaptations{}, &adaptLog{})
		meter, _ := budget.NewMeter(0.25, nil) // a window of reply costs $0.30
		a := New(m, newMemSandbox(nil), Task{ID: "t", Prompt: "Go."}, Config{Model: "m", Price: fixturePrice, Meter: meter,
			ContextWindow: window, MaxCompletionTokens: 1000})
		if out := a.Run(context.Background()); out.Status != StatusBudgetExhausted || out.Steps != 0 {
			t.Errorf("outcome = %+v, want budget_exhausted before any call", out)
		}
	})
	t.Run("past the window", func(t *testing.T) {
		srv := fakellm.New(t, fakellm.Text("done").WithUsage(300, window+1, 0))
		srv.SetMode(fakellm.ModeOllama)
		m := providerModel(t, srv, provider.Ollama, &Adaptations{}, &adaptLog{})
		meter, _ := budget.NewMeter(5, nil)
		a := New(m, newMemSandbox(nil), Task{ID: "t", Prompt: "Go."}, Config{Model: "m", Price: fixturePrice, Meter: meter,
			ContextWindow: window, MaxCompletionTokens: 1000})
		out := a.Run(context.Background())
		if out.Status != StatusBudgetExhausted || meter.Totals().Overrun == 0 {
			t.Errorf("outcome = %+v, overrun %s; want budget_exhausted with the overrun recorded", out, meter.Totals().Overrun)
		}
	})
}
