package agent

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/runner-dev/runner/budget"
	"github.com/runner-dev/runner/internal/fakellm"
	"github.com/runner-dev/runner/internal/policy"
	"github.com/runner-dev/runner/sandbox"
)

// memIsolator starts in-memory sandboxes holding a copy of the parent's
// regular files, and reports the changes of each as a Patch.
type memIsolator struct {
	mu      sync.Mutex
	started []*memIsolated
}

type memIsolated struct {
	sb     *memSandbox
	base   map[string]string
	closed bool
}

func (m *memIsolator) isolate(ctx context.Context, parent sandbox.Sandbox) (Isolated, error) {
	base, err := memFiles(ctx, parent)
	if err != nil {
		return nil, err
	}
	iso := &memIsolated{sb: newMemSandbox(base), base: base}
	m.mu.Lock()
	m.started = append(m.started, iso)
	m.mu.Unlock()
	return iso, nil
}

func memFiles(ctx context.Context, sb sandbox.Sandbox) (map[string]string, error) {
	list, err := sb.ListFiles(ctx, ".", true)
	if err != nil {
		return nil, err
	}
	files := map[string]string{}
	for _, f := range list {
		if f.Type == 0 {
			data, err := sb.ReadFile(ctx, f.Path)
			if err != nil {
				return nil, err
			}
			files[f.Path] = string(data)
		}
	}
	return files, nil
}

func (m *memIsolator) all() []*memIsolated {
	m.mu.Lock()
	defer m.mu.Unlock()
	return slices.Clone(m.started)
}

func (i *memIsolated) Sandbox() sandbox.Sandbox { return i.sb }

func (i *memIsolated) Patch(ctx context.Context) (Patch, error) {
	now, err := memFiles(ctx, i.sb)
	if err != nil {
		return Patch{}, err
	}
	var p Patch
	for path, data := range now {
		if old, ok := i.base[path]; !ok || old != data {
			p.Changes = append(p.Changes, FileChange{Path: path, Content: []byte(data), Mode: 0o644, Base: []byte(old), BaseExists: ok})
			p.Diff += "changed " + path + "\n"
		}
	}
	for path, old := range i.base {
		if _, ok := now[path]; !ok {
			p.Changes = append(p.Changes, FileChange{Path: path, Delete: true, Base: []byte(old), BaseExists: true})
		}
	}
	return p, nil
}

func (i *memIsolated) Close(ctx context.Context) error {
	i.closed = true
	return i.sb.Close(ctx)
}

// A parent hands one subtask to a sub-agent in its own workspace and one
// to an isolated sub-agent, applies the isolated one's patch, and ends with
// both changes; the sub-agents' events are nested in the trajectory, and
// the history read back from it is the parent's alone.
func TestDelegateSharedAndIsolated(t *testing.T) {
	sb := newMemSandbox(map[string]string{"README.md": "# Helo\n"})
	srv := fakellm.New(t,
		fakellm.ToolCall("delegate", `{"task":"Write a.txt."}`),
		fakellm.ToolCall("write_file", `{"path":"a.txt","content":"from one\n"}`),
		fakellm.ToolCall("complete", `{"summary":"wrote a.txt"}`),
		fakellm.ToolCall("delegate", `{"task":"Fix README.md.","isolated":true,"max_steps":5}`),
		fakellm.ToolCall("edit_file", `{"path":"README.md","old_string":"Helo","new_string":"Hello"}`),
		fakellm.ToolCall("complete", `{"summary":"fixed the typo"}`),
		fakellm.ToolCall("apply_patch", `{"id":"p1"}`),
		fakellm.ToolCall("complete", `{"summary":"all done"}`),
	)
	iso := &memIsolator{}
	a, traj := newTestAgent(t, srv, sb, Config{MaxSteps: 20, Delegate: Delegation{MaxDepth: 1, Isolate: iso.isolate}})
	out := a.Run(context.Background())
	if out.Status != StatusCompleted || out.Summary != "all done" {
		t.Fatalf("outcome = %+v", out)
	}
	if got := sb.file("a.txt"); got != "from one\n" {
		t.Errorf("a.txt = %q, want the shared sub-agent's write", got)
	}
	if got := sb.file("README.md"); got != "# Hello\n" {
		t.Errorf("README.md = %q, want the isolated sub-agent's patch applied", got)
	}
	if out.Steps != 8 || out.Spend.Calls != 8 {
		t.Errorf("steps %d, calls %d; want 8 and 8 (sub-agents' calls count)", out.Steps, out.Spend.Calls)
	}
	started := iso.all()
	if len(started) != 1 || !started[0].closed {
		t.Errorf("isolated sandboxes %d, closed %v; want one, closed", len(started), len(started) > 0 && started[0].closed)
	}
	reqs := srv.Requests()
	if !strings.Contains(reqs[1].Messages[1].Content, "Write a.txt.") || len(reqs[1].Messages) != 2 {
		t.Errorf("the sub-agent did not start with a fresh context: %+v", reqs[1].Messages)
	}
	if names := reqs[1].ToolNames(); slices.Contains(names, "delegate") {
		t.Errorf("a sub-agent at the depth limit was offered delegate: %v", names)
	}
	res := reqs[6].Messages[len(reqs[6].Messages)-1].Content
	if !strings.Contains(res, "fixed the typo") || !strings.Contains(res, "patch p1") {
		t.Errorf("delegate result = %q", res)
	}
	evs := events(t, traj)
	agents := map[string]int{}
	for _, e := range evs {
		agents[e.Agent]++
		if e.Agent != "" && e.ParentCall == "" {
			t.Errorf("sub-agent event without its parent call: %+v", e)
		}
	}
	if agents["1"] == 0 || agents["2"] == 0 {
		t.Errorf("events per agent = %v, want some of sub-agents 1 and 2", agents)
	}
	h, err := ReadHistory(nil, HistorySource{Name: "traj", R: bytes.NewReader(traj.Bytes())})
	if err != nil {
		t.Fatal(err)
	}
	if want := a.History(); len(h.Messages) != len(want) {
		t.Errorf("history read back has %d messages, the parent's has %d", len(h.Messages), len(want))
	}
	for _, m := range h.Messages {
		if strings.Contains(m.Content, "Your task:\n\nWrite a.txt.") {
			t.Errorf("a sub-agent's message is in the parent's history: %q", m.Content)
		}
	}
}

// Sub-agents nest at most MaxDepth deep: the last level is not offered
// delegate, and none is at depth 0.
func TestDelegateDepthLimit(t *testing.T) {
	for _, depth := range []int{0, 1, 2} {
		t.Run(fmt.Sprint(depth), func(t *testing.T) {
			srv := fakellm.New(t)
			srv.Forever(fakellm.Func(func(r fakellm.Request) fakellm.Turn {
				if slices.Contains(r.ToolNames(), "delegate") {
					return fakellm.ToolCall("delegate", `{"task":"go deeper"}`)
				}
				return fakellm.ToolCall("complete", `{"summary":"leaf"}`)
			}))
			a, traj := newTestAgent(t, srv, newMemSandbox(nil), Config{MaxSteps: 20, Delegate: Delegation{MaxDepth: depth}})
			a.Run(context.Background())
			deepest := 0
			for _, e := range events(t, traj) {
				if n := len(strings.Split(e.Agent, ".")); e.Agent != "" && n > deepest {
					deepest = n
				}
			}
			if deepest != depth {
				t.Errorf("deepest sub-agent at depth %d, want %d", deepest, depth)
			}
		})
	}
}

// An isolated sub-agent's patch that touches a protected path is refused
// whole, like any write there, and the other files of it are not applied.
func TestDelegatePatchOnProtectedPathRefused(t *testing.T) {
	sb := newMemSandbox(map[string]string{"ci.yml": "safe\n", "main.go": "package main\n"})
	srv := fakellm.New(t,
		fakellm.ToolCall("delegate", `{"task":"Change things.","isolated":true}`),
		fakellm.ToolCall("write_file", `{"path":"main.go","content":"package main // changed\n"}`),
		fakellm.ToolCall("run_command", `{"command":"echo evil > ci.yml"}`),
		fakellm.ToolCall("complete", `{"summary":"changed"}`),
		fakellm.ToolCall("apply_patch", `{"id":"p1"}`),
		fakellm.ToolCall("complete", `{"summary":"tried"}`),
	)
	iso := &memIsolator{}
	// The sub-agent has the task's policy too, so its file tools are
	// refused there; a command is not, and writes the file.
	isolate := func(ctx context.Context, p sandbox.Sandbox) (Isolated, error) {
		i, err := iso.isolate(ctx, p)
		if err == nil {
			isb := i.(*memIsolated).sb
			isb.exec = func(cmd string) (sandbox.ExecResult, error) {
				return sandbox.ExecResult{}, isb.WriteFile(context.Background(), "ci.yml", []byte("evil\n"), 0)
			}
		}
		return i, err
	}
	a, traj := newTestAgent(t, srv, sb, Config{Delegate: Delegation{MaxDepth: 1, Isolate: isolate},
		Policy: policy.Policy{Protected: []string{"ci.yml"}}})
	a.Run(context.Background())
	if sb.file("ci.yml") != "safe\n" || sb.file("main.go") != "package main\n" {
		t.Errorf("the refused patch changed the workspace: ci.yml %q, main.go %q", sb.file("ci.yml"), sb.file("main.go"))
	}
	var applied *Event
	for _, e := range events(t, traj) {
		if e.Type == EventToolResult && e.Tool == "apply_patch" {
			applied = &e
		}
	}
	if applied == nil || !applied.IsError || !strings.Contains(applied.Message.Content, "ci.yml") ||
		!strings.Contains(applied.Message.Content, "protected") {
		t.Fatalf("apply_patch result = %+v, want a refusal naming ci.yml", applied)
	}
}

// Cancelling the run while an isolated sub-agent works ends the run as
// interrupted and closes the sub-agent's sandbox.
func TestDelegateCancelClosesIsolatedSandbox(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	sb := newMemSandbox(nil)
	iso := &memIsolator{}
	srv := fakellm.New(t, fakellm.ToolCall("delegate", `{"task":"Work.","isolated":true}`),
		fakellm.Func(func(fakellm.Request) fakellm.Turn {
			cancel() // the user stops the run while the sub-agent waits for the model
			return fakellm.Hang()
		}))
	a, _ := newTestAgent(t, srv, sb, Config{Delegate: Delegation{MaxDepth: 1, Isolate: iso.isolate}})
	out := a.Run(ctx)
	if out.Status != StatusInterrupted {
		t.Errorf("status %s (%s), want interrupted", out.Status, out.Error)
	}
	started := iso.all()
	if len(started) != 1 || !started[0].closed {
		t.Fatalf("isolated sandboxes: %d, want one, closed", len(started))
	}
	if _, err := started[0].sb.ReadFile(context.Background(), "x"); !errors.Is(err, sandbox.ErrClosed) {
		t.Errorf("the isolated sandbox answers after the run: %v", err)
	}
}

// In an attended run the person is asked about a sub-agent's calls and
// about each file of a patch before it is applied; a refusal leaves the
// workspace as it was.
func TestDelegateAttendedPatchAsksThePerson(t *testing.T) {
	sb := newMemSandbox(map[string]string{"README.md": "# Helo\n"})
	srv := fakellm.New(t,
		fakellm.ToolCall("delegate", `{"task":"Fix README.md.","isolated":true}`),
		fakellm.ToolCall("edit_file", `{"path":"README.md","old_string":"Helo","new_string":"Hello"}`),
		fakellm.ToolCall("complete", `{"summary":"fixed"}`),
		fakellm.ToolCall("apply_patch", `{"id":"p1"}`),
		fakellm.ToolCall("complete", `{"summary":"tried"}`),
	)
	var mu sync.Mutex
	var asked []string
	approve := func(_ context.Context, r ApprovalRequest) (Approval, error) {
		mu.Lock()
		defer mu.Unlock()
		asked = append(asked, r.Tool+" "+r.Path)
		if r.Tool == "write_file" {
			return Approval{Reason: "not that file"}, nil
		}
		return Approval{Allow: true}, nil
	}
	iso := &memIsolator{}
	a, _ := newTestAgent(t, srv, sb, Config{Approve: approve, Delegate: Delegation{MaxDepth: 1, Isolate: iso.isolate}})
	a.Run(context.Background())
	if got := sb.file("README.md"); got != "# Helo\n" {
		t.Errorf("README.md = %q after the person refused the patch", got)
	}
	if want := []string{"edit_file README.md", "write_file README.md"}; !slices.Equal(asked, want) {
		t.Errorf("asked about %q, want %q", asked, want)
	}
	last := srv.Requests()[4].Messages
	if got := last[len(last)-1].Content; !strings.Contains(got, "not that file") {
		t.Errorf("apply_patch result = %q, want the person's reason", got)
	}
}

// A bug that panics while an isolated sub-agent works still closes its
// sandbox on the way out.
func TestDelegatePanicClosesIsolatedSandbox(t *testing.T) {
	iso := &memIsolator{}
	srv := fakellm.New(t, fakellm.ToolCall("delegate", `{"task":"Work.","isolated":true}`),
		fakellm.ToolCall("run_command", `{"command":"boom"}`))
	a, _ := newTestAgent(t, srv, newMemSandbox(nil), Config{Delegate: Delegation{MaxDepth: 1, Isolate: func(ctx context.Context, p sandbox.Sandbox) (Isolated, error) {
		i, err := iso.isolate(ctx, p)
		if err == nil {
			i.(*memIsolated).sb.exec = func(string) (sandbox.ExecResult, error) { panic("a bug") }
		}
		return i, err
	}}})
	func() {
		defer func() {
			if v := recover(); v != "a bug" {
				t.Errorf("recovered %v, want the panic", v)
			}
		}()
		a.Run(context.Background())
	}()
	if started := iso.all(); len(started) != 1 || !started[0].closed {
		t.Fatalf("isolated sandboxes: %d, want one, closed", len(started))
	}
}

// A sub-agent that runs out of budget leaves the share kept for the final
// call to the task's agent, which is told to finish and can.
func TestDelegateLeavesTheFinalReserve(t *testing.T) {
	srv := fakellm.New(t, fakellm.ToolCall("delegate", `{"task":"Spend."}`).WithUsage(1000, 10, 0))
	srv.Forever(fakellm.Func(func(r fakellm.Request) fakellm.Turn {
		if strings.Contains(r.Messages[len(r.Messages)-1].Content, "Budget notice") {
			return fakellm.ToolCall("complete", `{"summary":"finished in time"}`).WithUsage(1000, 10, 0)
		}
		return fakellm.ToolCall("run_command", `{"command":"x"}`).WithUsage(1000, 10, 0)
	}))
	meter, _ := budget.NewMeter(0.004, nil)
	a, traj := newTestAgent(t, srv, newMemSandbox(nil), Config{Meter: meter, MaxSteps: 1000, MaxCompletionTokens: 500,
		FinalReserve: 0.1, Delegate: Delegation{MaxDepth: 1, MaxSteps: 1000}})
	out := a.Run(context.Background())
	if out.Status != StatusCompleted || out.Summary != "finished in time" {
		t.Fatalf("outcome %s (%s) %q, want completed after the notice", out.Status, out.Error, out.Summary)
	}
	var subEnd *Event
	for _, e := range events(t, traj) {
		if e.Type == EventStatus && e.Agent == "1" {
			subEnd = &e
		}
		if e.Type == EventMessage && e.Agent != "" && strings.Contains(e.Message.Content, "Budget notice") {
			t.Errorf("a sub-agent was given the final notice")
		}
	}
	if subEnd == nil || subEnd.Status != StatusBudgetExhausted {
		t.Errorf("the sub-agent ended %+v, want budget_exhausted", subEnd)
	}
}
