package main

import (
	"fmt"
	"math"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/runner-dev/runner/internal/dockertest"
	"github.com/runner-dev/runner/internal/fakellm"
)

// providerFixture is one recorded provider as the end-to-end run uses it:
// the mode the scripted server enforces and the usage its recorded replies
// report (read off internal/fakellm/recordings by hand).
type providerFixture struct {
	mode                             fakellm.Mode
	prompt, cached, completion, call int64
}

var providerFixtures = map[string]providerFixture{
	"openai":     {fakellm.ModeOpenAI, 91 + 23, 0, 14 + 14, 2},
	"gemini":     {fakellm.ModeGemini, 35 + 66, 0, (109 - 35) + (100 - 66), 2},
	"deepseek":   {fakellm.ModeDeepSeek, 563 + 875 + 976, 512 + 896, 116 + 79 + 61, 3},
	"mistral":    {fakellm.ModeMistral, 124 + 31, 0, 22 + 161, 2},
	"groq":       {fakellm.ModeGroq, 218 + 17, 0, 15 + 649, 2},
	"ollama":     {fakellm.ModeOllama, 206 + 134, 0, 194 + 122, 2},
	"openrouter": {fakellm.ModeOpenRouter, 2572 + 2649 + 41, 2569, 63 + 100 + 1457, 3},
	"vllm":       {fakellm.ModeVLLM, 107, 0, 16, 1},
	"anthropic":  {fakellm.ModeAnthropic, 2572 + 2649, 0, 63 + 100, 2},
}

// recordedByTask plays each task the recorded replies of its provider,
// found by a word of its prompt.
type recordedByTask struct {
	mu      sync.Mutex
	scripts map[string][]fakellm.Turn
}

func (s *recordedByTask) turn(t *testing.T) fakellm.Turn {
	return fakellm.Func(func(r fakellm.Request) fakellm.Turn {
		s.mu.Lock()
		defer s.mu.Unlock()
		task := ""
		if len(r.Messages) > 1 {
			task = r.Messages[1].Content
		}
		for key, turns := range s.scripts {
			if strings.Contains(task, "provider-"+key+" ") {
				if len(turns) == 0 {
					t.Errorf("task of %s asked for more replies than were recorded", key)
					return fakellm.Status(500, `{"error":{"message":"no more recorded replies"}}`)
				}
				s.scripts[key] = turns[1:]
				return turns[0]
			}
		}
		t.Errorf("no recorded replies for a request whose task is %.80q", task)
		return fakellm.Status(500, `{"error":{"message":"no script for this task"}}`)
	})
}

// Every endpoint the README names, through the built binary: one task per
// provider (named with provider: in the task file), each answered with the
// replies recorded from that service by a server enforcing that service's
// rules. Every task succeeds (the recorded replies change nothing, so
// nothing is committed), no request is refused, and each
// task's cost is what its recorded usage says at the price file's rates.
func TestRecordedProvidersEndToEnd(t *testing.T) {
	repo, head := sourceRepo(t, map[string]string{"README.md": "# Helo\n"})
	image := dockertest.Busybox(t)
	scripts := map[string][]fakellm.Turn{}
	srv := fakellm.New(t)
	var file strings.Builder
	prices := `{"prices":[`
	fmt.Fprintf(&file, "defaults:\n  repo: %s\n  image: %s\n  budget_usd: 10\ntasks:\n", repo, image)
	for i, name := range fakellm.RecordedProviders() {
		fx, ok := providerFixtures[name]
		if !ok {
			t.Fatalf("recordings of %s have no expected usage here", name)
		}
		scripts[name] = fakellm.Recordings(name)
		model := "recorded-" + name
		srv.SetModeFor(model, fx.mode)
		if i > 0 {
			prices += ","
		}
		prices += fmt.Sprintf(`{"model":%q,"usd_per_mtok":{"input":3,"cached_input":0.3,"output":15}}`, model)
		fmt.Fprintf(&file, "  - id: %s\n    provider: %s\n    model: %s\n    prompt: provider-%s Fix the typo in README.md.\n", name, name, model, name)
	}
	prices += `]}`
	script := &recordedByTask{scripts: scripts}
	srv.Forever(script.turn(t))
	priceFile := filepath.Join(t.TempDir(), "prices.json")
	writeFile(t, priceFile, prices)
	out := filepath.Join(t.TempDir(), "out")

	// Replies of up to 1457 completion tokens were recorded. (Ollama's
	// ignored limit is replayed by the agent's tests, which can send a
	// limit per task.)
	res, pid := runRunner(t, srv, "run", writeTaskFile(t, file.String()), "--out", out, "-j", "3",
		"--prices", priceFile, "--max-completion-tokens", "2000")
	if res.code != 0 {
		t.Fatalf("exit %d\nstdout:\n%s\nstderr:\n%s", res.code, res.stdout, res.stderr)
	}
	results := byID(readResultLines(t, out))
	for name, fx := range providerFixtures {
		r, ok := results[name]
		if !ok {
			t.Errorf("%s: no result", name)
			continue
		}
		if r.Status != "succeeded" {
			t.Errorf("%s: status %s, error %q; want succeeded", name, r.Status, r.Error)
		}
		want := (float64(fx.prompt-fx.cached)*3 + float64(fx.cached)*0.3 + float64(fx.completion)*15) / 1e6
		tk := r.Tokens
		if math.Abs(r.CostUSD-want) > 1e-12 || tk.In != fx.prompt || tk.Cached != fx.cached || tk.Out != fx.completion || int64(r.Calls) != fx.call {
			t.Errorf("%s: cost $%v for %+v in %d calls; want $%v for %d in (%d cached), %d out in %d",
				name, r.CostUSD, tk, r.Calls, want, fx.prompt, fx.cached, fx.completion, fx.call)
		}
		if r.OverrunUSD != 0 {
			t.Errorf("%s: overrun $%v, want none", name, r.OverrunUSD)
		}
	}
	if refusals := srv.Refusals(); len(refusals) > 0 {
		t.Errorf("%d requests refused by their provider's rules, the first: %+v", len(refusals), refusals[0])
	}
	script.mu.Lock()
	for name, left := range script.scripts {
		if len(left) > 0 {
			t.Errorf("%s: %d recorded replies never asked for", name, len(left))
		}
	}
	script.mu.Unlock()
	userRepoUnchanged(t, repo, head)
	noLeftovers(t, pid)
}

// A server of unknown kind behind the default --provider auto refuses
// max_completion_tokens (Mistral's 422): the first task's model answers
// with max_tokens, its trajectory says so, and the second task of the run
// sends max_tokens from its first request.
func TestUnknownServerRefusalIsAnsweredOnceForTheRun(t *testing.T) {
	repo, head := sourceRepo(t, map[string]string{"README.md": "# Helo\n"})
	image := dockertest.Busybox(t)
	srv := fakellm.New(t)
	srv.SetMode(fakellm.ModeMistral)
	script := &recordedByTask{scripts: map[string][]fakellm.Turn{
		"first": fakellm.Recordings("mistral"), "second": fakellm.Recordings("mistral"),
	}}
	srv.Forever(script.turn(t))
	out := filepath.Join(t.TempDir(), "out")
	res, pid := runRunner(t, srv, "run", writeTaskFile(t, fmt.Sprintf(`defaults: {repo: %s, image: %s}
tasks:
  - {id: first, prompt: "provider-first Fix the typo."}
  - {id: second, prompt: "provider-second Fix the typo."}
`, repo, image)), "--out", out, "-j", "1")
	if res.code != 0 {
		t.Fatalf("exit %d\n%s\n%s", res.code, res.stdout, res.stderr)
	}
	refusals := srv.Refusals()
	if len(refusals) != 1 || refusals[0].Request != 1 || !strings.Contains(refusals[0].Body, "max_completion_tokens") {
		t.Fatalf("refusals = %+v, want only the first request's", refusals)
	}
	traj, err := os.ReadFile(filepath.Join(out, "trajectories", "first.1.jsonl"))
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(traj), `"type":"adapt"`) || !strings.Contains(string(traj), "sending the completion limit as max_tokens") {
		t.Errorf("the first task's trajectory does not record the change:\n%s", traj)
	}
	for i, r := range srv.Requests()[1:] {
		if r.MaxCompletionTokens != nil || r.MaxTokens == nil {
			t.Errorf("request %d after the refusal: max_tokens %v, max_completion_tokens %v", i+2, r.MaxTokens, r.MaxCompletionTokens)
		}
	}
	userRepoUnchanged(t, repo, head)
	noLeftovers(t, pid)
}
