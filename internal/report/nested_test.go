package report

import (
	"bufio"
	"bytes"
	"strings"
	"testing"
	"time"

	"github.com/runner-dev/runner/agent"
)

// A sub-agent's events are grouped under the delegate call that started
// it, indented and named, its steps kept apart from its parent's; its
// texts are escaped like the parent's.
func TestTimelineNestsSubAgents(t *testing.T) {
	now := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	var buf bytes.Buffer
	traj := agent.NewTrajectory(&buf)
	rec := func(e agent.Event) { e.Time = now; traj.Record(e) }
	call := agent.WireToolCall{ID: "call_d", Name: "delegate", Arguments: `{"task":"sub"}`}
	rec(agent.Event{Type: agent.EventTask, Text: "the task"})
	rec(agent.Event{Type: agent.EventRequest, Step: 1})
	rec(agent.Event{Type: agent.EventResponse, Step: 1, Message: &agent.WireMessage{Role: "assistant", ToolCalls: []agent.WireToolCall{call}}})
	for _, e := range []agent.Event{
		{Type: agent.EventTask, Text: "sub"},
		{Type: agent.EventMessage, Message: &agent.WireMessage{Role: "user", Content: "Your task:\n\nsub" + terminalHostile}},
		{Type: agent.EventRequest, Step: 1},
		{Type: agent.EventResponse, Step: 1, Message: &agent.WireMessage{Role: "assistant", Content: "working" + terminalHostile,
			ToolCalls: []agent.WireToolCall{{ID: "call_s", Name: "run_command", Arguments: `{"command":"ls"}`}}}},
		{Type: agent.EventToolResult, Step: 1, Tool: "run_command", Message: &agent.WireMessage{Role: "tool", ToolCallID: "call_s", Content: "a.txt"}},
		{Type: agent.EventStatus, Step: 1, Status: agent.StatusCompleted, Summary: "sub done"},
	} {
		e.Agent, e.ParentCall = "1", "call_d"
		rec(e)
	}
	rec(agent.Event{Type: agent.EventToolResult, Step: 1, Tool: "delegate", Message: &agent.WireMessage{Role: "tool", ToolCallID: "call_d", Content: "Sub-agent 1 ended"}})
	rec(agent.Event{Type: agent.EventStatus, Step: 2, Status: agent.StatusCompleted, Summary: "done"})

	tl, err := readTimeline(&buf)
	if err != nil {
		t.Fatal(err)
	}
	if tl.Steps != 2 {
		t.Errorf("steps = %d, want 2 (one each)", tl.Steps)
	}
	parent := tl.Entries[0]
	if parent.Kind != KindStep || parent.Agent != "" || len(parent.Calls) != 1 || !parent.Calls[0].HasResult {
		t.Errorf("the parent's step = %+v, want the delegate call with its result", parent)
	}
	for _, e := range tl.Entries[1:4] {
		if e.Agent != "1" || e.Depth != 1 {
			t.Errorf("entry %s of the sub-agent marked %q/%d", e.Kind, e.Agent, e.Depth)
		}
	}
	var out bytes.Buffer
	w := &textWriter{w: bufio.NewWriter(&out)}
	w.timeline(tl)
	w.w.Flush()
	text := out.String()
	noControls(t, text)
	for _, want := range []string{"\n    sub-agent 1 · step 1", "\n    message to sub-agent 1", "\n    sub-agent 1 ended: completed",
		"\n      → run_command command=ls", "\nthe agent ended: completed"} {
		if !strings.Contains(text, want) {
			t.Errorf("the timeline lacks %q:\n%s", want, text)
		}
	}
	if strings.Contains(text, "\nbranch:    forged") {
		t.Errorf("a sub-agent's text passes for a line of the view:\n%s", text)
	}
}
