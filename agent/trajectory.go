package agent

import (
	"bytes"
	"encoding/json"
	"io"
	"sync"
	"time"

	"github.com/runner-dev/runner/internal/egress"
	"github.com/runner-dev/runner/internal/redact"
	"github.com/runner-dev/runner/internal/termsafe"
)

// Event types of a trajectory.
const (
	EventTask       = "task"        // the task and the tools offered
	EventMessage    = "message"     // a system or user message added to the history
	EventRequest    = "request"     // a model call about to be made, with its budget reservation
	EventResponse   = "response"    // the model's reply, usage and cost
	EventRetry      = "retry"       // a failed attempt of a model call that is retried
	EventToolResult = "tool_result" // a tool call's result, added to the history
	EventCompaction = "compaction"  // history compacted
	EventStatus     = "status"      // the run ended
	EventCheck      = "check"       // the runner's check command ran
	EventPanic      = "panic"       // a bug of the runner ended the task: Error and the stack in Text
	EventEndpoint   = "endpoint"    // a model call waits for the endpoint to answer again, or has waited
	EventAdapt      = "adapt"       // the request rules changed in answer to a server's refusal: the change in Text
	EventBound      = "bound"       // prompt bounds fell back from the tokenizer to bytes: why in Text
	EventEgress     = "egress"      // the egress proxy allowed or refused a connection, or stopped (Egress)
	EventSetup      = "setup"       // the task's setup ran (its commands in Text, output in Summary) or was reused (Status "cached")
	EventProtocol   = "protocol"    // the tool protocol changed for the rest of the task: the new one in Protocol, why in Text
)

// Event is one JSON Lines record of a trajectory. The sequence of message,
// response and tool_result events is the full history, compactions
// notwithstanding.
type Event struct {
	Time time.Time `json:"time"`
	Type string    `json:"type"`
	Step int       `json:"step,omitempty"`
	// Agent names the sub-agent that recorded the event ("1", "1.2": the
	// second sub-agent of sub-agent 1), "" for the task's agent;
	// ParentCall is the delegate call that started it. A sub-agent's
	// events are not part of its parent's history.
	Agent      string `json:"agent,omitempty"`
	ParentCall string `json:"parent_call,omitempty"`

	Message *WireMessage `json:"message,omitempty"`
	Tools   []string     `json:"tools,omitempty"`
	// Protocol is how tools are offered and calls read (task, continue,
	// protocol): native, xml or auto (see WithProtocol).
	Protocol string `json:"protocol,omitempty"`

	// request
	Messages            int   `json:"messages,omitempty"`
	PromptBound         int64 `json:"prompt_bound,omitempty"`
	MaxCompletionTokens int64 `json:"max_completion_tokens,omitempty"`
	// ReservedUSD is the money held for the call (on its response too,
	// beside CostUSD, what was charged).
	ReservedUSD float64 `json:"reserved_usd,omitempty"`
	Purpose     string  `json:"purpose,omitempty"` // "" for a step, "compaction" for a summary
	// BoundTokenizer is how the prompt bound was counted: a tokenizer
	// (o200k_base, cl100k_base) or "bytes"; BoundMargin the share added
	// to a tokenizer's count (absent for bytes). See agent/bound.go.
	BoundTokenizer string  `json:"bound_tokenizer,omitempty"`
	BoundMargin    float64 `json:"bound_margin,omitempty"`

	// response
	FinishReason   string  `json:"finish_reason,omitempty"`
	Usage          *Usage  `json:"usage,omitempty"`
	UsageEstimated bool    `json:"usage_estimated,omitempty"`
	CostUSD        float64 `json:"cost_usd,omitempty"`
	// ChargedAtBound: the server may have billed the call without saying
	// how much (a failed attempt, a reply without usage), so the whole
	// reservation was charged.
	ChargedAtBound bool `json:"charged_at_bound,omitempty"`
	// PromptCountRatio is the prompt tokens the server counted for the
	// messages no earlier count covered, over their bound (1 or less
	// while the bound holds).
	PromptCountRatio float64 `json:"prompt_count_ratio,omitempty"`
	// OverrunUSD is what the reply cost beyond its reservation; the run
	// ends when it is set.
	OverrunUSD float64 `json:"overrun_usd,omitempty"`
	Model      string  `json:"model,omitempty"`
	LatencyMS  int64   `json:"latency_ms,omitempty"`
	// GeneratedCallIDs are the tool call ids runner gave calls the server
	// sent without one (or with one an earlier call already had).
	GeneratedCallIDs []string `json:"generated_call_ids,omitempty"`

	// tool_result
	Tool      string `json:"tool,omitempty"`
	Arguments string `json:"arguments,omitempty"`
	IsError   bool   `json:"is_error,omitempty"`
	Malformed bool   `json:"malformed,omitempty"`
	Blocked   string `json:"blocked,omitempty"` // why the policy refused the call, which did not run
	// Approval is what the person attending the run said of the call:
	// "approved", "refused", or the standing rule that allowed it.
	Approval   string `json:"approval,omitempty"`
	DurationMS int64  `json:"duration_ms,omitempty"`

	// compaction
	Stage          string `json:"stage,omitempty"` // "elide" or "summarize"
	Replaced       int    `json:"replaced,omitempty"`
	TokensBefore   int64  `json:"tokens_before,omitempty"`
	TokensAfter    int64  `json:"tokens_after,omitempty"`
	ElidedMessages []int  `json:"elided_messages,omitempty"`

	// retry, status, check
	Attempt int      `json:"attempt,omitempty"`
	WaitMS  int64    `json:"wait_ms,omitempty"`
	Status  Status   `json:"status,omitempty"`
	Summary string   `json:"summary,omitempty"`
	Error   string   `json:"error,omitempty"`
	Outcome *Outcome `json:"outcome,omitempty"`
	Text    string   `json:"text,omitempty"`

	// egress
	Egress *egress.Event `json:"egress,omitempty"`
}

// WireMessage is a Message as stored in a trajectory.
type WireMessage struct {
	Role       string         `json:"role"`
	Content    string         `json:"content,omitempty"`
	ToolCalls  []WireToolCall `json:"tool_calls,omitempty"`
	ToolCallID string         `json:"tool_call_id,omitempty"`
	Name       string         `json:"name,omitempty"`
	// Reasoning, ReasoningField, ReasoningDetails and Extra are what the
	// message came with for the server to get back (see Message).
	Reasoning        string          `json:"reasoning,omitempty"`
	ReasoningField   string          `json:"reasoning_field,omitempty"`
	ReasoningDetails json.RawMessage `json:"reasoning_details,omitempty"`
	Extra            json.RawMessage `json:"extra_content,omitempty"`
}

// WireToolCall is a ToolCall as stored in a trajectory.
type WireToolCall struct {
	ID        string          `json:"id"`
	Name      string          `json:"name"`
	Arguments string          `json:"arguments"`
	Extra     json.RawMessage `json:"extra_content,omitempty"`
	// Unreadable is why the call could not be read (see ToolCall).
	Unreadable string `json:"unreadable,omitempty"`
}

func wireMessage(m Message) *WireMessage {
	w := &WireMessage{Role: m.Role, Content: m.Content, ToolCallID: m.ToolCallID, Name: m.Name,
		Reasoning: m.Reasoning, ReasoningField: m.ReasoningField, ReasoningDetails: m.ReasoningDetails, Extra: m.Extra}
	for _, c := range m.ToolCalls {
		w.ToolCalls = append(w.ToolCalls, WireToolCall{ID: c.ID, Name: c.Name, Arguments: c.Arguments, Extra: c.Extra, Unreadable: c.Unreadable})
	}
	return w
}

// Message converts back.
func (w *WireMessage) Message() Message {
	m := Message{Role: w.Role, Content: w.Content, ToolCallID: w.ToolCallID, Name: w.Name,
		Reasoning: w.Reasoning, ReasoningField: w.ReasoningField, ReasoningDetails: w.ReasoningDetails, Extra: w.Extra}
	for _, c := range w.ToolCalls {
		m.ToolCalls = append(m.ToolCalls, ToolCall{ID: c.ID, Name: c.Name, Arguments: c.Arguments, Extra: c.Extra, Unreadable: c.Unreadable})
	}
	return m
}

// Trajectory writes events as JSON Lines, with secrets redacted from every
// record (package redact) and what a terminal could act on written as \u
// escapes (termsafe.JSON), so that `tail -f` of a trajectory is safe. It is
// safe for concurrent use; a nil *Trajectory records nothing.
type Trajectory struct {
	mu      sync.Mutex
	w       io.Writer
	redact  *redact.Redactor
	err     error
	observe func(Event)
	// parent, when set, gets every event, marked as agent's (see nested).
	parent           *Trajectory
	agent, callOfSub string
}

// NewTrajectory writes to w, hiding the given secret values and anything
// shaped like a credential.
func NewTrajectory(w io.Writer, secrets ...string) *Trajectory {
	return &Trajectory{w: w, redact: redact.New(secrets...)}
}

// Record writes one event. The first write error is kept (see Err) and
// later events are dropped: a full disk must not stop the agent.
func (t *Trajectory) Record(e Event) {
	if t == nil {
		return
	}
	if t.parent != nil {
		if e.Agent == "" {
			e.Agent, e.ParentCall = t.agent, t.callOfSub
		}
		t.parent.Record(e)
		return
	}
	if e.Time.IsZero() {
		e.Time = time.Now().UTC()
	}
	line, err := encodeLine(e)
	if err != nil {
		return
	}
	line = termsafe.JSON(t.redactLine(line))
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.observe != nil {
		t.observe(e)
	}
	if t.err != nil {
		return
	}
	_, t.err = t.w.Write(line)
}

// Observe makes f hear every event recorded from now on, in order, also
// after a write error. f gets the event as recorded, before redaction: it
// must not pass its texts on. f runs while Record holds the trajectory's
// lock, so it must be quick and must not record.
func (t *Trajectory) Observe(f func(Event)) {
	if t == nil {
		return
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	t.observe = f
}

// encodeLine writes v as one line of JSON, without HTML escaping so that a
// secret is stored as written, and found.
func encodeLine(v any) ([]byte, error) {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	err := enc.Encode(v)
	return buf.Bytes(), err
}

// redactLine hides the secrets of a JSON line, each string on its own.
func (t *Trajectory) redactLine(line []byte) []byte {
	if clean, err := t.redact.JSON(line); err == nil {
		return clean
	}
	// Not reached (line is encoding/json's own); masking the text still
	// hides every secret, if at the cost of the line's shape.
	return []byte(t.redact.String(string(line)))
}

// nested is the trajectory of a sub-agent: its events go to t, marked
// with the sub-agent's id and the call that started it.
func (t *Trajectory) nested(agent, call string) *Trajectory {
	if t == nil {
		return nil
	}
	return &Trajectory{parent: t, agent: agent, callOfSub: call}
}

// Err is the first write error, if any.
func (t *Trajectory) Err() error {
	if t == nil {
		return nil
	}
	if t.parent != nil {
		return t.parent.Err()
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.err
}
