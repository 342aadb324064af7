package bench

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/runner-dev/runner/agent"
	"github.com/runner-dev/runner/internal/fakellm"
	"github.com/runner-dev/runner/sandbox"
)

// tokenSteps is the length of the scripted run: this many commands, each
// printing commandOutput bytes, then complete.
const (
	tokenSteps    = 200
	commandOutput = 2000
)

// BenchmarkTokens plays a 200-step scripted run (a command per step, 2 KB
// of output each) against the fake Chat Completions server, with and
// without compaction, for a 32k and a 128k context window. The server
// bills a quarter of the request's bytes as prompt tokens, and counts as
// cached the part of the prompt (tools and messages) shared with the
// previous request of the same kind, in 128-token blocks from 1024 tokens,
// as OpenAI's prompt cache does. It reports per-call prompt tokens (median,
// max), total tokens and the cached share of prompt tokens; ns/op is
// runner's own time for the whole run. Goal: with compaction the per-call
// prompt stays bounded (under the window); without it, it grows with the
// run.
func BenchmarkTokens(b *testing.B) {
	for _, window := range []int64{32000, 128000} {
		for _, compaction := range []bool{false, true} {
			name := fmt.Sprintf("window=%dk/compaction=%s", window/1000, map[bool]string{false: "off", true: "on"}[compaction])
			b.Run(name, func(b *testing.B) {
				var bill *billing
				var out agent.Outcome
				for b.Loop() {
					bill = &billing{}
					srv := fakellm.New(b)
					srv.Forever(fakellm.Func(bill.answer))
					model, err := agent.NewOpenAI(agent.OpenAIConfig{BaseURL: srv.URL(), APIKey: "sk-bench"})
					if err != nil {
						b.Fatal(err)
					}
					a := agent.New(model, commandSandbox{}, agent.Task{ID: "tokens", Prompt: "Read every part file."},
						agent.Config{Model: "gpt-4o-mini", MaxSteps: 2 * tokenSteps, ContextWindow: window, NoCompaction: !compaction})
					if out = a.Run(context.Background()); out.Status != agent.StatusCompleted {
						b.Fatalf("run ended %s: %s", out.Status, out.Error)
					}
				}
				bill.report(b, out)
				if maxPrompt := slices.Max(bill.taskPrompts()); compaction && maxPrompt > window {
					b.Fatalf("largest prompt %d tokens with compaction, over the %d window", maxPrompt, window)
				}
			})
		}
	}
}

// billing is the fake server's script and account: it plays a model that
// runs a command per step, and bills every call.
type billing struct {
	mu                  sync.Mutex
	steps               int
	calls               []call
	lastTask, lastOther string
}

type call struct {
	task                       bool // a step of the task, not a summary
	prompt, cached, completion int64
}

func (bl *billing) answer(r fakellm.Request) fakellm.Turn {
	bl.mu.Lock()
	defer bl.mu.Unlock()
	text := renderPrompt(r)
	task := len(r.Tools) > 0
	prev := &bl.lastOther
	if task {
		prev = &bl.lastTask
	}
	c := call{task: task, prompt: int64(len(r.Body)+3) / 4, cached: cachedTokens(commonPrefix(*prev, text))}
	*prev = text
	var t fakellm.Turn
	switch {
	case !task:
		c.completion = 60
		t = fakellm.Text(fmt.Sprintf("Summary: ran the commands of steps 1 to %d; each printed its part file, all data.", bl.steps))
	case bl.steps >= tokenSteps:
		c.completion = 20
		t = fakellm.ToolCall("complete", `{"summary":"Read every part file."}`)
	default:
		bl.steps++
		c.completion = 30
		t = fakellm.ToolCall("run_command", fmt.Sprintf(`{"command":"cat part-%d.txt"}`, bl.steps))
	}
	c.cached = min(c.cached, c.prompt)
	bl.calls = append(bl.calls, c)
	return t.WithUsage(c.prompt, c.completion, c.cached)
}

// renderPrompt is the request as a provider's prompt cache sees it: the
// tools, then each message in order.
func renderPrompt(r fakellm.Request) string {
	var b strings.Builder
	for _, t := range r.Tools {
		fmt.Fprintf(&b, "%+v\n", t)
	}
	for _, m := range r.Messages {
		fmt.Fprintf(&b, "%s|%s|%s|%+v\n", m.Role, m.ToolCallID, m.Content, m.ToolCalls)
	}
	return b.String()
}

func commonPrefix(a, b string) int {
	n := min(len(a), len(b))
	for i := range n {
		if a[i] != b[i] {
			return i
		}
	}
	return n
}

// cachedTokens turns a shared prefix of n bytes into cached tokens: none
// under 1024 tokens, else whole blocks of 128.
func cachedTokens(n int) int64 {
	tok := int64(n) / 4
	if tok < 1024 {
		return 0
	}
	return tok / 128 * 128
}

func (bl *billing) taskPrompts() []int64 {
	var p []int64
	for _, c := range bl.calls {
		if c.task {
			p = append(p, c.prompt)
		}
	}
	return p
}

func (bl *billing) report(b *testing.B, out agent.Outcome) {
	p := bl.taskPrompts()
	slices.Sort(p)
	var prompt, cached, completion int64
	for _, c := range bl.calls {
		prompt, cached, completion = prompt+c.prompt, cached+c.cached, completion+c.completion
	}
	b.ReportMetric(float64(p[len(p)/2]), "prompt-tok-median")
	b.ReportMetric(float64(p[len(p)-1]), "prompt-tok-max")
	b.ReportMetric(float64(prompt+completion)/1000, "total-ktok")
	b.ReportMetric(100*float64(cached)/float64(prompt), "cached-%")
	b.ReportMetric(float64(len(bl.calls)), "calls")
	b.ReportMetric(float64(out.Compactions), "compactions")
}

// commandSandbox answers every command with commandOutput bytes of text;
// the file methods are not used by the run.
type commandSandbox struct{}

var _ sandbox.Sandbox = commandSandbox{}

var errUnused = errors.New("not used by the benchmark")

func (commandSandbox) Exec(_ context.Context, cmd string, _ sandbox.ExecOptions) (sandbox.ExecResult, error) {
	out := cmd + "\n" + strings.Repeat("data ", commandOutput/5)
	return sandbox.ExecResult{Stdout: out, Output: out}, nil
}
func (commandSandbox) ReadFile(context.Context, string) ([]byte, error) { return nil, errUnused }
func (commandSandbox) WriteFile(context.Context, string, []byte, fs.FileMode) error {
	return errUnused
}
func (commandSandbox) ListFiles(context.Context, string, bool) ([]sandbox.FileInfo, error) {
	return nil, errUnused
}
func (commandSandbox) Snapshot(context.Context) (io.ReadCloser, error) { return nil, errUnused }
func (commandSandbox) Close(context.Context) error                     { return nil }
