package agent

import (
	"crypto/sha256"
	"encoding/json"
	"fmt"

	"github.com/runner-dev/runner/budget"
)

// promptBounds bounds the prompt tokens of a task's requests. A message is
// bounded by its tokens under the model's tokenizer, with the margin of
// budget.WithMargin and the framing overheads, where the price table names
// the tokenizer, and never above its byte bound (budget.TokensUpperBound),
// which holds for any tokenizer. Tool definitions and the request's own
// framing are always bounded by bytes: they are sent once, and after the
// first reply they are inside the count the server reported.
//
// The tokenizer bound holds only if the server counts with that
// tokenizer, which a model's name does not prove (a local model may be
// served under an OpenAI name). So it is used only once the server's own
// count has agreed with it: until then bytes bound every message, and the
// tokenizer's bound of the same messages is compared with what the server
// counted (see calibrate). If a server ever counts more prompt tokens than
// the tokenizer predicted, before or after, the tokenizer is dropped for
// the rest of the task and bytes bound every message from then on.
type promptBounds struct {
	tokenizer budget.Tokenizer // TokenizerBytes once fallen back
	trusted   bool             // the server's count agreed with the tokenizer's bound
	fallback  string           // why the tokenizer was dropped
	// byMessage caches a message's bound by the SHA-256 of its JSON, so a
	// message is counted once however often it is sent without a known
	// prefix (the first call, after a compaction).
	byMessage map[[sha256.Size]byte]int64
}

func newPromptBounds(t budget.Tokenizer) promptBounds {
	if !t.Known() {
		t = budget.TokenizerBytes
	}
	return promptBounds{tokenizer: t, byMessage: map[[sha256.Size]byte]int64{}}
}

// method names how messages are bounded and the margin applied, for the
// reservation events of the trajectory.
func (b *promptBounds) method() (string, float64) {
	if b.tokenizer == budget.TokenizerBytes || !b.trusted {
		return budget.TokenizerBytes.String(), 0
	}
	return b.tokenizer.String(), budget.TokenizerMargin
}

// message bounds the tokens of one message, framing included, as used:
// by the tokenizer once trusted, else by bytes.
func (b *promptBounds) message(m Message) int64 {
	if !b.trusted {
		raw, _ := json.Marshal(wireMessage(m))
		return budget.TokensUpperBound(len(raw))
	}
	return b.byTokenizer(m)
}

// byTokenizer bounds one message by its tokens under the tokenizer, never
// above its byte bound; by bytes only once the tokenizer is dropped.
func (b *promptBounds) byTokenizer(m Message) int64 {
	raw, _ := json.Marshal(wireMessage(m))
	byBytes := budget.TokensUpperBound(len(raw))
	if b.tokenizer == budget.TokenizerBytes {
		return byBytes
	}
	key := sha256.Sum256(raw)
	if n, ok := b.byMessage[key]; ok {
		return n
	}
	texts := []string{m.Role, m.Content, m.ToolCallID, m.Name, m.Reasoning, m.ReasoningField,
		string(m.ReasoningDetails), string(m.Extra)}
	for _, c := range m.ToolCalls {
		texts = append(texts, c.ID, c.Name, c.Arguments, string(c.Extra))
	}
	n, err := budget.CountTokens(b.tokenizer, texts...)
	if err != nil {
		b.drop(fmt.Sprintf("the %s tokenizer failed: %v", b.tokenizer, err))
		return byBytes
	}
	bound := min(budget.WithMargin(n)+budget.MessageOverhead+budget.ToolCallOverhead*int64(len(m.ToolCalls)), byBytes)
	b.byMessage[key] = bound
	return bound
}

// drop falls back to the byte bound for the rest of the task.
func (b *promptBounds) drop(why string) {
	if b.tokenizer == budget.TokenizerBytes {
		return
	}
	b.fallback = why + "; prompts are bounded by their bytes from now on"
	b.tokenizer = budget.TokenizerBytes
	b.trusted = false
	clear(b.byMessage)
}

// promptBound bounds the prompt tokens of a request. For a step of the
// task (prefixKnown: msgs is the history), that is the exact count the
// server last reported for a prefix of the history plus a bound of the
// messages added since; otherwise, and before any report, a bound of every
// message and tool definition plus the request's framing. newPart is the
// part of the bound that the server's count has not covered. Until the
// tokenizer is trusted, trial is what it would have bounded the same
// request by (0 when no earlier count covers a prefix).
// What a model's own request form adds (see PromptFramer) is added to
// both.
func (a *Agent) promptBound(msgs []Message, tools []ToolSpec, prefixKnown bool) (bound, newPart, trial int64) {
	if prefixKnown && a.knownLen > 0 && a.knownLen <= len(msgs) {
		for _, m := range msgs[a.knownLen:] {
			newPart += a.bounds.message(m)
			if !a.bounds.trusted && a.bounds.tokenizer.Known() {
				trial += a.bounds.byTokenizer(m)
			}
		}
		framing := a.framing(msgs, tools, a.knownLen)
		newPart += framing
		if trial > 0 {
			trial += a.known + framing
		}
		return a.known + newPart, newPart, trial
	}
	newPart = budget.RequestOverhead
	for _, m := range msgs {
		newPart += a.bounds.message(m)
	}
	for _, t := range tools {
		b, _ := json.Marshal(t)
		newPart += budget.TokensUpperBound(len(b))
	}
	newPart += a.framing(msgs, tools, 0)
	return newPart, newPart, 0
}

// calibrate compares the prompt tokens the server counted for a request
// with its bound. It returns the ratio of what the server counted for the
// part not covered by an earlier count to the bound of that part (for the
// trajectory), and drops the tokenizer if the server counted more than the
// bound: the tokenizer, its margin or the framing allowed for do not hold
// for this server, and only bytes are sure to.
//
// A trial bound (see promptBound) the server's count kept to makes the
// tokenizer trusted from the next call on; one it passed drops it.
func (a *Agent) calibrate(counted, bound, newPart, trial int64) float64 {
	ratio := 0.0
	if newPart > 0 {
		ratio = float64(counted-(bound-newPart)) / float64(newPart)
	}
	switch {
	case trial > 0 && counted <= trial:
		a.bounds.trusted = true
	case trial > 0:
		a.bounds.drop(fmt.Sprintf("the server counted %d prompt tokens where the %s bound would have been %d", counted, a.bounds.tokenizer, trial))
	case counted > bound && a.bounds.trusted:
		a.bounds.drop(fmt.Sprintf("the server counted %d prompt tokens where the %s bound was %d", counted, a.bounds.tokenizer, bound))
	}
	if a.bounds.fallback != "" && !a.fellBack {
		a.fellBack = true
		a.cfg.Trajectory.Record(Event{Type: EventBound, Step: a.steps, Text: a.bounds.fallback})
	}
	return ratio
}

// DefaultFinalReserve is the share of the budget kept for the final call
// (see Config.FinalReserve).
const DefaultFinalReserve = 0.03

// finalReserve is the money kept back for the final call: none once the
// model was told, or without a cap.
func (a *Agent) finalReserve() budget.Nanodollars {
	if a.finalNoticed || a.cfg.FinalReserve <= 0 {
		return 0
	}
	return budget.Nanodollars(float64(a.cfg.Meter.TightestCap()) * a.cfg.FinalReserve)
}

// finalNotice tells the model that the budget left pays for little more
// than a final call.
func (a *Agent) finalNotice() string {
	left, _ := a.cfg.Meter.Available()
	return fmt.Sprintf("Budget notice: $%.4f of the $%.4f budget is left, too little for more than a final step or two. "+
		"Finish now: call complete with a summary of what you did, what works and what is left to do.",
		left.USD(), a.cfg.Meter.TightestCap().USD())
}
