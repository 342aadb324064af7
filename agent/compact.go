package agent

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
)

// Compaction keeps the prompt inside the model's context window. When the
// estimated prompt passes CompactAt of the window, it first elides the
// output of old tool calls; if that is not enough, it has the model
// summarize the older history and puts the summary in its place. The system
// prompt and the task (the cached prefix) and the latest KeepRecent turns
// stay verbatim, and a turn (an assistant message and the results of its
// tool calls) is never split.

const (
	// bytesPerToken turns bytes into an estimated token count. It is an
	// estimate for deciding when to compact, never used for money.
	bytesPerToken = 3
	// elideAbove is the size under which a tool result is not worth eliding.
	elideAbove = 256
	// summaryTarget is the fraction of the window the history should shrink
	// to when it is summarized, so that compaction does not run every step.
	summaryTarget = 0.5
)

var errCannotCompact = errors.New("the history does not fit the context window and cannot be compacted further")

// estimate guesses the prompt tokens of msgs.
func (a *Agent) estimate(msgs []Message) int64 {
	if a.knownLen > 0 && a.knownLen <= len(msgs) {
		return a.known + (int64(sum(messageSizes(msgs[a.knownLen:])))+a.framing(msgs, a.specs, a.knownLen))/bytesPerToken
	}
	n := sum(messageSizes(msgs))
	for _, t := range a.specs {
		b, _ := json.Marshal(t)
		n += len(b)
	}
	return (int64(n) + a.framing(msgs, a.specs, 0)) / bytesPerToken
}

// compact shrinks the history when it nears the window, or always when
// force is set (the server said the context was exceeded). It keeps as many
// recent turns verbatim as it can: KeepRecent first, fewer only when the
// history still does not fit.
func (a *Agent) compact(ctx context.Context, force bool) error {
	if a.cfg.NoCompaction {
		return nil
	}
	window := a.cfg.ContextWindow
	limit := int64(a.cfg.CompactAt * float64(window))
	est := a.estimate(a.history)
	if !force && est <= limit {
		return nil
	}
	keep := a.cfg.KeepRecent
	if force {
		keep = max(1, keep/2)
	}
	for ; keep >= 1; keep-- {
		recent := a.recentStart(keep)
		// Stage 1: elide the output of tool calls older than the recent turns.
		if elided := a.elide(recent); len(elided) > 0 {
			after := a.estimate(a.history)
			a.cfg.Trajectory.Record(Event{Type: EventCompaction, Step: a.steps, Stage: "elide",
				ElidedMessages: elided, TokensBefore: est, TokensAfter: after})
			est = after
			if !force && est <= int64(summaryTarget*float64(window)) {
				return nil
			}
		}
		// Stage 2: summarize everything between the task and the recent turns.
		if recent > 3 || recent == 3 && !strings.HasPrefix(a.history[2].Content, summaryPrefix) {
			if err := a.summarizeBefore(ctx, recent, est); err != nil {
				return err
			}
			est = a.estimate(a.history)
			force = false
			if est <= limit {
				return nil
			}
		}
	}
	if est > window {
		return fmt.Errorf("%w: about %d tokens for a window of %d", errCannotCompact, est, window)
	}
	return nil
}

// elide replaces the content of large tool results before index end.
func (a *Agent) elide(end int) []int {
	var elided []int
	for i := 2; i < end; i++ {
		m := &a.history[i]
		if m.Role == RoleTool && len(m.Content) > elideAbove && !strings.HasPrefix(m.Content, elidedPrefix) {
			m.Content = elidedContent(*m)
			elided = append(elided, i)
		}
	}
	if len(elided) > 0 {
		a.knownLen = 0
		a.compactions++
	}
	return elided
}

// summarizeBefore replaces history[2:end] by the model's summary of it.
func (a *Agent) summarizeBefore(ctx context.Context, end int, before int64) error {
	summary, err := a.summarize(ctx, a.history[2:end])
	if err != nil {
		return fmt.Errorf("compact history: %w", err)
	}
	kept := append([]Message{}, a.history[end:]...)
	a.history = append(a.history[:2], Message{Role: RoleUser, Content: summaryPrefix + summary})
	a.history = append(a.history, kept...)
	a.knownLen = 0
	a.compactions++
	a.cfg.Trajectory.Record(Event{Type: EventCompaction, Step: a.steps, Stage: "summarize", Replaced: end - 2,
		Summary: summary, TokensBefore: before, TokensAfter: a.estimate(a.history)})
	return nil
}

// elidedContent is what an elided tool result says in place of m's output.
func elidedContent(m Message) string {
	return fmt.Sprintf("%s %d bytes of %s output removed to save context; run the tool again if you need it]",
		elidedPrefix, len(m.Content), m.Name)
}

const (
	elidedPrefix  = "[elided:"
	summaryPrefix = "[Summary of your earlier work on this task, written when the history was compacted]\n\n"
)

// recentStart returns the index where the latest keep turns begin. A turn
// begins at an assistant message or at a user message after the task.
func (a *Agent) recentStart(keep int) int {
	seen := 0
	for i := len(a.history) - 1; i >= 2; i-- {
		r := a.history[i].Role
		if r == RoleAssistant || r == RoleUser {
			seen++
			if seen == keep {
				return i
			}
		}
	}
	return 2
}

// summarize has the model write a summary of old messages, charged to the
// budget like any call.
func (a *Agent) summarize(ctx context.Context, old []Message) (string, error) {
	text := renderHistory(old, int(a.cfg.ContextWindow)*bytesPerToken/2)
	msgs := []Message{
		{Role: RoleSystem, Content: "You summarize the work of a software engineer on a task, so that they can " +
			"continue it with the summary in place of the history. Keep every fact they will need: what they " +
			"found, what they changed (files and what changed in them), commands run and their results, errors " +
			"still open, and the plan for the next steps. Be concise and concrete."},
		{Role: RoleUser, Content: taskMessage(a.task) + "\n\nThe work so far:\n\n" + text +
			"\n\nWrite the summary now."},
	}
	resp, err := a.call(ctx, msgs, nil, min(a.cfg.MaxCompletionTokens, 4096), "compaction")
	if err != nil {
		return "", err
	}
	if strings.TrimSpace(resp.Message.Content) == "" {
		return "", errors.New("the model returned an empty summary")
	}
	return resp.Message.Content, nil
}

// renderHistory writes messages as text for the summarizer, each capped,
// the whole within limit bytes (head and tail kept).
func renderHistory(msgs []Message, limit int) string {
	var b strings.Builder
	for _, m := range msgs {
		switch m.Role {
		case RoleAssistant:
			if m.Content != "" {
				fmt.Fprintf(&b, "You said: %s\n", capOutput(m.Content, 2000))
			}
			for _, c := range m.ToolCalls {
				fmt.Fprintf(&b, "You called %s(%s)\n", c.Name, capOutput(c.Arguments, 1000))
			}
		case RoleTool:
			fmt.Fprintf(&b, "Result of %s: %s\n", m.Name, capOutput(m.Content, 1500))
		default:
			fmt.Fprintf(&b, "Message (%s): %s\n", m.Role, capOutput(m.Content, 4000))
		}
	}
	return capOutput(b.String(), max(limit, 1000))
}

func sum(xs []int) int {
	n := 0
	for _, x := range xs {
		n += x
	}
	return n
}
