package agent

import (
	"context"
	"fmt"
	"io"
	"math/rand/v2"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/runner-dev/runner/budget"
	"github.com/runner-dev/runner/sandbox"
)

// delegatingModel is randomModel that also hands out subtasks, shared or
// isolated, when delegate is offered, and applies the patches it is told of.
type delegatingModel struct {
	randomModel
	drng *rand.Rand
}

func (m *delegatingModel) Complete(ctx context.Context, req Request) (Response, error) {
	resp, err := m.randomModel.Complete(ctx, req)
	if err != nil || len(resp.Message.ToolCalls) == 0 {
		return resp, err
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	offered := slices.ContainsFunc(req.Tools, func(t ToolSpec) bool { return t.Name == delegateName })
	last := req.Messages[len(req.Messages)-1]
	switch r := m.drng.IntN(10); {
	case offered && strings.Contains(last.Content, "apply_patch {"):
		id := last.Content[strings.Index(last.Content, `{"id":`):]
		id = id[:strings.IndexByte(id, '}')+1]
		resp.Message.ToolCalls[0] = ToolCall{ID: fmt.Sprint("p", m.drng.Int()), Name: applyPatchName, Arguments: id}
	case offered && r < 3:
		resp.Message.ToolCalls[0] = ToolCall{ID: fmt.Sprint("d", m.drng.Int()), Name: delegateName,
			Arguments: fmt.Sprintf(`{"task":"sub %d","max_steps":%d,"isolated":%v}`, m.drng.IntN(100), 1+m.drng.IntN(30), r == 0)}
	case r < 5:
		resp.Message.ToolCalls[0] = ToolCall{ID: fmt.Sprint("w", m.drng.Int()), Name: "write_file",
			Arguments: fmt.Sprintf(`{"path":"f%d.txt","content":"%d"}`, m.drng.IntN(5), m.drng.Int())}
	}
	return resp, nil
}

// Whatever a parent and its sub-agents (nested two deep, shared or
// isolated) do, their spending together never passes the task's cap nor
// the run's, and their model calls together stay within the task's steps.
func TestDelegatedSpendNeverPassesTheCap(t *testing.T) {
	seed := uint64(time.Now().UnixNano())
	t.Logf("seed %d", seed)
	rng := rand.New(rand.NewPCG(seed, 15))
	price := testPrice(t)
	price.Tokenizer = budget.TokenizerBytes
	var seen struct {
		sync.Mutex
		sub, applied int
	}
	for round := 0; round < 25; round++ {
		runCap := 0.005 + rng.Float64()*0.03
		run, _ := budget.NewMeter(runCap, nil)
		tasks := 1 + rng.IntN(4)
		var wg sync.WaitGroup
		meters := make([]*budget.Meter, tasks)
		caps := make([]float64, tasks)
		for i := range tasks {
			caps[i] = 0.001 + rng.Float64()*0.02
			meters[i], _ = budget.NewMeter(caps[i], run)
			sb := newMemSandbox(nil)
			out := func(cmd string) (sandbox.ExecResult, error) {
				var n int
				fmt.Sscanf(cmd, "out %d", &n)
				return sandbox.ExecResult{Output: strings.Repeat("y", n)}, nil
			}
			sb.exec = out
			iso := &memIsolator{}
			isolate := func(ctx context.Context, p sandbox.Sandbox) (Isolated, error) {
				got, err := iso.isolate(ctx, p)
				if err == nil {
					got.(*memIsolated).sb.exec = out
				}
				return got, err
			}
			model := &delegatingModel{
				randomModel: randomModel{rng: rand.New(rand.NewPCG(rng.Uint64(), uint64(i))), overhead: rng.Int64N(1025)},
				drng:        rand.New(rand.NewPCG(rng.Uint64(), 3)),
			}
			maxSteps := 10 + rng.IntN(50)
			cfg := Config{
				Model: price.Model, Price: price, Meter: meters[i], MaxSteps: maxSteps,
				MaxCompletionTokens: 500 + rng.Int64N(8000), ContextWindow: 8000 + rng.Int64N(60000),
				Delegate:   Delegation{MaxDepth: 1 + rng.IntN(2), MaxSteps: rng.IntN(20), Isolate: isolate},
				Trajectory: NewTrajectory(io.Discard),
			}
			cfg.Trajectory.Observe(func(e Event) {
				seen.Lock()
				defer seen.Unlock()
				if e.Agent != "" && e.Type == EventResponse {
					seen.sub++
				}
				if e.Type == EventToolResult && e.Tool == applyPatchName && !e.IsError {
					seen.applied++
				}
			})
			wg.Add(1)
			go func() {
				defer wg.Done()
				out := New(model, sb, Task{ID: fmt.Sprint(i), Prompt: "work"}, cfg).Run(context.Background())
				switch out.Status {
				case StatusCompleted, StatusBudgetExhausted, StatusStepLimit:
				default:
					t.Errorf("round %d task %d: unexpected outcome %+v", round, i, out)
				}
				if out.Steps > maxSteps {
					t.Errorf("round %d task %d: %d steps of %d", round, i, out.Steps, maxSteps)
				}
				for _, s := range iso.all() {
					if !s.closed {
						t.Errorf("round %d task %d: an isolated sandbox was left open", round, i)
					}
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
	t.Logf("%d model calls of sub-agents, %d patches applied", seen.sub, seen.applied)
	if seen.sub == 0 {
		t.Errorf("the rounds made no calls of sub-agents: the property was not exercised")
	}
}
