package fakellm

import (
	"encoding/json"
	"fmt"
	"slices"
)

// Validate returns the ways req breaks the Chat Completions rules that a
// real server enforces or that show a client bug: a missing model, roles out
// of order, tool calls left unanswered, tool messages answering unknown
// calls, tool calls without tools offered. A well-formed request yields nil.
func Validate(req Request) []error { return validate(req, ModeDefault) }

// validate is Validate under mode m: OpenAI's rule against sending both
// max_tokens and max_completion_tokens holds only for OpenAI (and without
// a mode); other providers apply their own.
func validate(req Request, m Mode) []error {
	var errs []error
	add := func(format string, args ...any) { errs = append(errs, fmt.Errorf(format, args...)) }

	if req.Model == "" {
		add("model is missing")
	}
	if len(req.Messages) == 0 {
		add("messages is empty")
	}
	if req.MaxTokens != nil && req.MaxCompletionTokens != nil && !allowsBothCaps(m) {
		add("both max_tokens and max_completion_tokens are set")
	}

	type callSite struct {
		msg      int
		answered bool
	}
	calls := map[string]*callSite{} // every tool call id seen so far
	var pending []string            // ids of the last assistant message still unanswered
	hasCalls := false

	unanswered := func(at string) {
		for _, id := range pending {
			if !calls[id].answered {
				add("tool call id %q of message %d is not answered by a tool message %s",
					id, calls[id].msg, at)
			}
		}
		pending = nil
	}

	for i, m := range req.Messages {
		switch m.Role {
		case "system", "developer", "user", "assistant", "tool":
		default:
			add("message %d: unknown role %q", i, m.Role)
			continue
		}
		if i == 0 && m.Role != "system" && m.Role != "developer" && m.Role != "user" {
			add("message 0: conversation starts with role %q, want system, developer or user", m.Role)
		}
		if m.Role != "tool" && len(pending) > 0 {
			unanswered(fmt.Sprintf("before message %d (%s)", i, m.Role))
		}

		switch m.Role {
		case "system", "developer", "user":
			if !m.HasContent {
				add("message %d: %s message has no content", i, m.Role)
			}
		case "assistant":
			if !m.HasContent && len(m.ToolCalls) == 0 {
				add("message %d: assistant message has neither content nor tool_calls", i)
			}
			for j, c := range m.ToolCalls {
				hasCalls = true
				switch {
				case c.ID == "":
					add("message %d: tool call %d has no id", i, j)
					continue
				case calls[c.ID] != nil:
					add("message %d: tool call id %q already used by message %d", i, c.ID, calls[c.ID].msg)
					continue
				}
				if c.Type != "function" {
					add("message %d: tool call %q has type %q, want \"function\"", i, c.ID, c.Type)
				}
				if c.Function.Name == "" {
					add("message %d: tool call %q names no function", i, c.ID)
				}
				calls[c.ID] = &callSite{msg: i}
				pending = append(pending, c.ID)
			}
		case "tool":
			prev := ""
			if i > 0 {
				prev = req.Messages[i-1].Role
			}
			if prev != "tool" && !(prev == "assistant" && len(req.Messages[i-1].ToolCalls) > 0) {
				add("message %d: tool message does not follow an assistant message with tool_calls", i)
			}
			if !m.HasContent {
				add("message %d: tool message has no content", i)
			}
			site := calls[m.ToolCallID]
			switch {
			case m.ToolCallID == "":
				add("message %d: tool message has no tool_call_id", i)
			case site == nil:
				add("message %d: tool_call_id %q matches no previous call", i, m.ToolCallID)
			case site.answered:
				add("message %d: tool_call_id %q is answered a second time", i, m.ToolCallID)
			case !slices.Contains(pending, m.ToolCallID):
				add("message %d: tool_call_id %q belongs to message %d, not to the assistant message just before",
					i, m.ToolCallID, site.msg)
			default:
				site.answered = true
			}
		}
	}
	unanswered("before the end of the conversation")

	if hasCalls && len(req.Tools) == 0 {
		add("the conversation has tool calls but the request offers no tools")
	}
	names := map[string]bool{}
	for i, t := range req.Tools {
		if t.Type != "function" {
			add("tool %d: type %q, want \"function\"", i, t.Type)
		}
		name := t.Function.Name
		if name == "" {
			add("tool %d: function has no name", i)
		} else if names[name] {
			add("tool %d: function name %q offered twice", i, name)
		}
		names[name] = true
		if len(t.Function.Parameters) > 0 {
			var schema map[string]any
			if err := json.Unmarshal(t.Function.Parameters, &schema); err != nil || schema == nil {
				add("tool %d (%s): parameters are not a JSON object", i, name)
			}
		}
	}
	return errs
}
