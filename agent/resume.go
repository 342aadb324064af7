package agent

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"

	"github.com/runner-dev/runner/internal/redact"
)

// EventContinue opens the trajectory of a run that goes on from an
// earlier one's history (see Agent.Resume): Messages is the length of the
// history it starts with, Attempt the attempt it continues.
const EventContinue = "continue"

// ErrCorruptTrajectory: a trajectory cannot be read back into a history.
var ErrCorruptTrajectory = errors.New("the trajectory cannot be read back into a history")

// HistorySource is one trajectory to rebuild a history from, and the name
// (a file path) errors give it.
type HistorySource struct {
	Name string
	R    io.Reader
}

// ReadHistory rebuilds the history an agent had when its run ended, from
// its trajectory: the system and user messages, the model's replies and
// the tool results, with every compaction applied as it was, so that the
// messages are the ones the model was last sent, byte for byte, followed
// by what came after. A run that itself continued another is read after
// the trajectories it continued, oldest first.
//
// Every line passes through the same redaction as a trajectory's (secrets
// are the values to hide), so a history never holds a secret, even from
// a trajectory written before the value became one. Each model request
// recorded is checked against the history rebuilt so far; a line that
// cannot be read, a compaction or continuation that does not fit, or a
// history that does not start with the system prompt and the task is an
// error wrapping ErrCorruptTrajectory and naming the source.
//
// Tool calls of the last reply that never got a result (the run ended
// while they ran) are answered with a note that they did not run.
func ReadHistory(secrets []string, sources ...HistorySource) (History, error) {
	red := redact.New(secrets...)
	var h History
	for _, src := range sources {
		if err := h.replay(red, src.R); err != nil {
			return History{}, fmt.Errorf("%w: %s: %w", ErrCorruptTrajectory, src.Name, err)
		}
	}
	m := h.Messages
	if len(m) < 2 || m[0].Role != RoleSystem || m[1].Role != RoleUser {
		return History{}, fmt.Errorf("%w: it does not start with the system prompt and the task", ErrCorruptTrajectory)
	}
	h.Messages = answerPendingCalls(m)
	return h, nil
}

// History is the history of a run as ReadHistory rebuilds it.
type History struct {
	Messages []Message
	// KnownTokens is the prompt token count the server reported for
	// Messages[:KnownLen], the last step's request; KnownLen is 0 when
	// none is known (a compaction came after it). With it a continuation
	// estimates its prompt as the run would have, and does not compact a
	// history the run would have sent as it was.
	KnownTokens int64
	KnownLen    int

	sent int // messages of the last step request read
}

// replay applies the events of one trajectory.
func (hist *History) replay(red *redact.Redactor, r io.Reader) error {
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 0, 1<<20), 256<<20)
	for line := 1; sc.Scan(); line++ {
		clean, err := red.JSON(sc.Bytes())
		if err != nil {
			return fmt.Errorf("line %d: %w", line, err)
		}
		var e Event
		if err := json.Unmarshal(clean, &e); err != nil {
			return fmt.Errorf("line %d: %w", line, err)
		}
		if e.Agent != "" {
			continue // a sub-agent's: not in this history
		}
		if hist.Messages, err = applyEvent(hist.Messages, e); err != nil {
			return fmt.Errorf("line %d: %w", line, err)
		}
		hist.noteTokens(e)
	}
	return sc.Err()
}

// noteTokens follows the prompt token count the server last reported, as
// Agent.call and Agent.compact do.
func (hist *History) noteTokens(e Event) {
	switch {
	case e.Type == EventRequest && e.Purpose == "" && e.Messages > 0:
		hist.sent = e.Messages
	case e.Type == EventResponse && e.Purpose == "" && e.Error == "" && e.Message != nil &&
		e.Usage != nil && !e.UsageEstimated && hist.sent > 0:
		hist.KnownTokens, hist.KnownLen = e.Usage.PromptTokens, hist.sent
	case e.Type == EventCompaction:
		hist.KnownTokens, hist.KnownLen, hist.sent = 0, 0, 0
	}
}

// applyEvent does to h what the agent did when it recorded e.
func applyEvent(h []Message, e Event) ([]Message, error) {
	switch e.Type {
	case EventMessage, EventToolResult:
		if e.Message == nil {
			return nil, fmt.Errorf("%s event without a message", e.Type)
		}
		return append(h, e.Message.Message()), nil
	case EventResponse:
		// A reply joins the history unless it failed (an attempt, an
		// overrun) or was a compaction's summary.
		if e.Message != nil && e.Error == "" && e.Purpose == "" {
			return append(h, e.Message.Message()), nil
		}
	case EventRequest:
		if e.Purpose == "" && e.Messages > 0 && e.Messages != len(h) {
			return nil, fmt.Errorf("step %d was sent %d messages, but %d are recorded before it", e.Step, e.Messages, len(h))
		}
	case EventContinue:
		if e.Messages != len(h) {
			return nil, fmt.Errorf("it continues a history of %d messages, but the earlier trajectories hold %d", e.Messages, len(h))
		}
	case EventCompaction:
		return applyCompaction(h, e)
	}
	return h, nil
}

func applyCompaction(h []Message, e Event) ([]Message, error) {
	switch e.Stage {
	case "elide":
		for _, i := range e.ElidedMessages {
			if i < 2 || i >= len(h) || h[i].Role != RoleTool {
				return nil, fmt.Errorf("compaction elides message %d, which is not a tool result of the %d", i, len(h))
			}
			h[i].Content = elidedContent(h[i])
		}
	case "summarize":
		end := e.Replaced + 2
		if e.Replaced < 1 || end > len(h) {
			return nil, fmt.Errorf("compaction replaces %d messages of %d", e.Replaced, len(h))
		}
		kept := append([]Message{}, h[end:]...)
		h = append(h[:2], Message{Role: RoleUser, Content: summaryPrefix + e.Summary})
		h = append(h, kept...)
	default:
		return nil, fmt.Errorf("unknown compaction stage %q", e.Stage)
	}
	return h, nil
}

// answerPendingCalls answers the calls of the last assistant message that
// have no result, so that the history is one a server accepts.
func answerPendingCalls(h []Message) []Message {
	last := -1
	for i := len(h) - 1; i >= 0 && last < 0; i-- {
		switch h[i].Role {
		case RoleAssistant:
			last = i
		case RoleTool:
		default:
			return h
		}
	}
	if last < 0 {
		return h
	}
	answered := map[string]bool{}
	for _, m := range h[last+1:] {
		answered[m.ToolCallID] = true
	}
	for _, c := range h[last].ToolCalls {
		if !answered[c.ID] {
			h = append(h, Message{Role: RoleTool, ToolCallID: c.ID, Name: c.Name,
				Content: "Not run: the earlier attempt ended before this call ran."})
		}
	}
	return h
}

// Resume goes on with the history of an earlier run (see ReadHistory),
// from attempt from, with this agent's limits as its own: prompt is added
// as a user message and the loop runs as Run's does. The history is kept
// as it is, so that the prefix the model was last sent is sent again
// unchanged (and a provider's prompt cache still applies); compaction
// shrinks it as it would any history that nears the window.
func (a *Agent) Resume(ctx context.Context, history History, prompt string, from int) Outcome {
	a.start = a.cfg.Now()
	names := make([]string, len(a.specs))
	for i, s := range a.specs {
		names[i] = s.Name
	}
	a.history = append([]Message(nil), history.Messages...)
	if history.KnownLen > 0 && history.KnownLen <= len(a.history) {
		a.known, a.knownLen = history.KnownTokens, history.KnownLen
	}
	a.cfg.Trajectory.Record(Event{Type: EventContinue, Messages: len(a.history), Attempt: from, Tools: names, Model: a.cfg.Model,
		Protocol: protocolOf(a.model)})
	a.add(Message{Role: RoleUser, Content: prompt})
	return a.loop(ctx)
}
