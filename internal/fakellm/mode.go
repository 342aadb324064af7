package fakellm

import (
	"encoding/json"
	"fmt"
	"net/http"
	"regexp"
	"slices"
	"sort"
	"strings"
	"sync"
)

// Mode makes the server enforce one provider's rules on top of Validate's,
// and answer a request that breaks them the way that provider does, with
// its status and error body. Unlike a malformed request, a refusal under a
// mode does not fail the test: a client may be expected to adapt to it.
// Every refusal is kept (see Refusals).
type Mode string

// The modes. ModeDefault enforces Validate only.
const (
	ModeDefault    Mode = ""
	ModeOpenAI     Mode = "openai"
	ModeGemini     Mode = "gemini"
	ModeAnthropic  Mode = "anthropic"
	ModeDeepSeek   Mode = "deepseek"
	ModeMistral    Mode = "mistral"
	ModeGroq       Mode = "groq"
	ModeOpenRouter Mode = "openrouter"
	ModeOllama     Mode = "ollama"
	ModeVLLM       Mode = "vllm"
	// ModeNoTools is a server without tool calling (vLLM started without
	// --enable-auto-tool-choice): a request offering tools, or holding tool
	// calls or tool messages, gets a 400 saying so.
	ModeNoTools Mode = "notools"
)

// Refusal is a request a mode refused.
type Refusal struct {
	Request int // 1-based, in arrival order
	Mode    Mode
	Status  int
	Body    string
}

// SetMode makes every request follow m's rules, except those of a model
// given its own mode with SetModeFor.
func (s *Server) SetMode(m Mode) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.mode = m
}

// SetModeFor makes the requests naming model follow m's rules.
func (s *Server) SetModeFor(model string, m Mode) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.modes == nil {
		s.modes = map[string]Mode{}
	}
	s.modes[model] = m
}

// Refusals returns the requests refused under a mode, in order.
func (s *Server) Refusals() []Refusal {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]Refusal(nil), s.refusals...)
}

func (s *Server) modeOf(model string) Mode {
	s.mu.Lock()
	defer s.mu.Unlock()
	if m, ok := s.modes[model]; ok {
		return m
	}
	return s.mode
}

// issued remembers what replies carried that a provider wants back
// unchanged: reasoning per tool call id, thought signatures, reasoning
// details.
type issued struct {
	mu         sync.Mutex
	reasoning  map[string]string // tool call id -> reasoning_content of its reply
	signatures map[string]bool
	details    map[string]bool // canonical JSON of reasoning_details
}

// note records what a reply body carries.
func (is *issued) note(body []byte) {
	var c struct {
		Choices []struct {
			Message struct {
				ReasoningContent *string         `json:"reasoning_content"`
				ReasoningDetails json.RawMessage `json:"reasoning_details"`
				Extra            googleExtra     `json:"extra_content"`
				ToolCalls        []struct {
					ID    string      `json:"id"`
					Extra googleExtra `json:"extra_content"`
				} `json:"tool_calls"`
			} `json:"message"`
		} `json:"choices"`
	}
	if json.Unmarshal(body, &c) != nil || len(c.Choices) == 0 {
		return
	}
	m := c.Choices[0].Message
	is.mu.Lock()
	defer is.mu.Unlock()
	if is.reasoning == nil {
		is.reasoning, is.signatures, is.details = map[string]string{}, map[string]bool{}, map[string]bool{}
	}
	if sig := m.Extra.signature(); sig != nil {
		is.signatures[*sig] = true
	}
	for _, tc := range m.ToolCalls {
		if m.ReasoningContent != nil && tc.ID != "" {
			is.reasoning[tc.ID] = *m.ReasoningContent
		}
		if sig := tc.Extra.signature(); sig != nil {
			is.signatures[*sig] = true
		}
	}
	if d := canonical(m.ReasoningDetails); d != "" && d != "null" {
		is.details[d] = true
	}
}

// googleExtra is Gemini's extra_content, on a message or a tool call.
type googleExtra struct {
	Google struct {
		ThoughtSignature *string `json:"thought_signature"`
	} `json:"google"`
}

func (g googleExtra) signature() *string { return g.Google.ThoughtSignature }

func canonical(raw json.RawMessage) string {
	var v any
	if json.Unmarshal(raw, &v) != nil {
		return ""
	}
	b, _ := json.Marshal(v)
	return string(b)
}

// refusal is how a mode answers a request that breaks its rules.
type refusal struct {
	status int
	body   string
}

// check applies mode m's rules to req and returns its refusal, or nil.
func (is *issued) check(m Mode, req Request) *refusal {
	var raw struct {
		Top      map[string]json.RawMessage
		Messages []map[string]json.RawMessage `json:"messages"`
	}
	if json.Unmarshal(req.Body, &raw.Top) != nil || json.Unmarshal(req.Body, &raw) != nil {
		return nil // Validate reports it
	}
	switch m {
	case ModeOpenAI:
		return checkOpenAI(raw.Messages)
	case ModeGemini:
		return is.checkGemini(raw.Messages)
	case ModeDeepSeek:
		return is.checkDeepSeek(raw.Messages)
	case ModeMistral:
		return checkMistral(raw.Top, raw.Messages)
	case ModeGroq:
		return checkGroq(raw.Top, raw.Messages)
	case ModeOpenRouter:
		return is.checkOpenRouter(raw.Messages)
	case ModeNoTools:
		return checkNoTools(raw.Top, raw.Messages)
	}
	return nil
}

// checkNoTools refuses anything about tools, with vLLM's words and shape.
func checkNoTools(top map[string]json.RawMessage, msgs []map[string]json.RawMessage) *refusal {
	refuse := func(message string) *refusal {
		return &refusal{status: http.StatusBadRequest, body: string(mustJSON(map[string]any{
			"object": "error", "message": message, "type": "BadRequestError", "param": nil, "code": http.StatusBadRequest,
		}))}
	}
	if _, ok := top["tools"]; ok {
		return refuse(`"auto" tool choice requires --enable-auto-tool-choice and --tool-call-parser to be set`)
	}
	if _, ok := top["tool_choice"]; ok {
		return refuse(`"auto" tool choice requires --enable-auto-tool-choice and --tool-call-parser to be set`)
	}
	for i, m := range msgs {
		var role string
		_ = json.Unmarshal(m["role"], &role)
		if _, calls := m["tool_calls"]; calls || role == "tool" {
			return refuse(fmt.Sprintf("messages.%d: tool calls and tool messages are not supported by this model's chat template", i))
		}
	}
	return nil
}

// allowsBothCaps reports whether Validate's rule against max_tokens and
// max_completion_tokens together (OpenAI's) is left to mode m's own rules:
// servers that read whichever of the two they know take both, and Mistral
// answers the one it does not know.
func allowsBothCaps(m Mode) bool {
	return m != ModeDefault && m != ModeOpenAI
}

// The fields each role may carry on the strict servers.
var messageFields = map[string][]string{
	"system":    {"role", "content", "name"},
	"developer": {"role", "content", "name"},
	"user":      {"role", "content", "name"},
	"assistant": {"role", "content", "name", "tool_calls", "refusal", "audio", "function_call"},
	"tool":      {"role", "content", "tool_call_id"},
}

var callFields = []string{"id", "type", "function"}

// unknownFields lists the fields of msg (and of its tool calls, as
// tool_calls.N.field) that its role does not have, sorted.
func unknownFields(msg map[string]json.RawMessage) (role string, extra []string) {
	_ = json.Unmarshal(msg["role"], &role)
	allowed := messageFields[role]
	for k := range msg {
		if !slices.Contains(allowed, k) {
			extra = append(extra, k)
		}
	}
	var calls []map[string]json.RawMessage
	_ = json.Unmarshal(msg["tool_calls"], &calls)
	for i, c := range calls {
		for k := range c {
			if !slices.Contains(callFields, k) {
				extra = append(extra, fmt.Sprintf("tool_calls.%d.%s", i, k))
			}
		}
	}
	sort.Strings(extra)
	return role, extra
}

// checkOpenAI refuses fields the API does not define on a message, as
// OpenAI does.
func checkOpenAI(msgs []map[string]json.RawMessage) *refusal {
	for i, msg := range msgs {
		if _, extra := unknownFields(msg); len(extra) > 0 {
			return &refusal{http.StatusBadRequest, errorBody("invalid_request_error", "",
				fmt.Sprintf("Additional properties are not allowed ('%s' was unexpected) - 'messages.%d'", extra[0], i))}
		}
	}
	return nil
}

// checkGemini wants, on every assistant message with tool calls in the
// current turn (after the last user message), a thought signature it
// issued, once it has issued any: on the first call (Gemini 3) or on the
// message (as Gemini 2.5 returns it). The body is Gemini's: an error
// object wrapped in an array.
func (is *issued) checkGemini(msgs []map[string]json.RawMessage) *refusal {
	is.mu.Lock()
	defer is.mu.Unlock()
	if len(is.signatures) == 0 {
		return nil
	}
	for i := currentTurn(msgs); i < len(msgs); i++ {
		var m struct {
			Role      string      `json:"role"`
			Extra     googleExtra `json:"extra_content"`
			ToolCalls []struct {
				Function struct {
					Name string `json:"name"`
				} `json:"function"`
				Extra googleExtra `json:"extra_content"`
			} `json:"tool_calls"`
		}
		if json.Unmarshal(mustJSON(msgs[i]), &m) != nil || m.Role != "assistant" || len(m.ToolCalls) == 0 {
			continue
		}
		sig := m.ToolCalls[0].Extra.signature()
		if sig == nil {
			sig = m.Extra.signature()
		}
		switch {
		case sig == nil:
			return &refusal{http.StatusBadRequest, geminiError(fmt.Sprintf("Function call is missing a thought_signature in functionCall parts. "+
				"This is required for tools to work correctly, and missing thought_signature may lead to degraded model performance. "+
				"Additional data, function call `default_api:%s` , position %d. please refer to https://ai.google.dev/gemini-api/docs/thought-signatures for more details.",
				m.ToolCalls[0].Function.Name, i+1))}
		case !is.signatures[*sig]:
			return &refusal{http.StatusBadRequest, geminiError("Corrupted thought signature.")}
		}
	}
	return nil
}

func geminiError(message string) string {
	b, _ := json.Marshal([]any{map[string]any{"error": map[string]any{
		"code": 400, "message": message, "status": "INVALID_ARGUMENT"}}})
	return string(b)
}

// currentTurn is the index after the last user message.
func currentTurn(msgs []map[string]json.RawMessage) int {
	start := 0
	for i, msg := range msgs {
		var role string
		_ = json.Unmarshal(msg["role"], &role)
		if role == "user" {
			start = i + 1
		}
	}
	return start
}

func mustJSON(v any) []byte {
	b, _ := json.Marshal(v)
	return b
}

// checkDeepSeek wants reasoning_content on every assistant message with
// tool calls, equal to the reasoning the reply carried when it carried
// some: DeepSeek's thinking mode.
func (is *issued) checkDeepSeek(msgs []map[string]json.RawMessage) *refusal {
	is.mu.Lock()
	defer is.mu.Unlock()
	for i, msg := range msgs {
		var m struct {
			Role      string  `json:"role"`
			Reasoning *string `json:"reasoning_content"`
			ToolCalls []struct {
				ID string `json:"id"`
			} `json:"tool_calls"`
		}
		if json.Unmarshal(mustJSON(msg), &m) != nil || m.Role != "assistant" || len(m.ToolCalls) == 0 {
			continue
		}
		if m.Reasoning == nil {
			return &refusal{http.StatusBadRequest, deepSeekError(fmt.Sprintf("Missing `reasoning_content` field in the assistant message at message index %d. "+
				"For more information, please refer to https://api-docs.deepseek.com/guides/thinking_mode#tool-calls", i))}
		}
		for _, c := range m.ToolCalls {
			if want, ok := is.reasoning[c.ID]; ok && want != *m.Reasoning {
				return &refusal{http.StatusBadRequest, deepSeekError("The reasoning_content in the thinking mode must be passed back to the API.")}
			}
		}
	}
	return nil
}

func deepSeekError(message string) string {
	b, _ := json.Marshal(map[string]any{"error": map[string]any{
		"message": message, "type": "invalid_request_error", "param": nil, "code": "invalid_request_error"}})
	return string(b)
}

// mistralIDs is the only tool call id shape Mistral accepts.
var mistralIDs = regexp.MustCompile(`^[a-zA-Z0-9]{9}$`)

// checkMistral refuses what Mistral's schema forbids: max_completion_tokens
// and any field a message does not have (422, extra_forbidden), and tool
// call ids that are not nine letters and digits (400).
func checkMistral(top map[string]json.RawMessage, msgs []map[string]json.RawMessage) *refusal {
	type detail struct {
		Type  string          `json:"type"`
		Loc   []any           `json:"loc"`
		Msg   string          `json:"msg"`
		Input json.RawMessage `json:"input"`
	}
	forbid := func(loc []any, input json.RawMessage) *refusal {
		b, _ := json.Marshal(map[string]any{
			"object":  "error",
			"message": map[string]any{"detail": []detail{{"extra_forbidden", loc, "Extra inputs are not permitted", input}}},
			"type":    "invalid_request_error", "param": nil, "code": nil,
		})
		return &refusal{http.StatusUnprocessableEntity, string(b)}
	}
	if v, ok := top["max_completion_tokens"]; ok {
		return forbid([]any{"body", "max_completion_tokens"}, v)
	}
	for i, msg := range msgs {
		role, extra := unknownFields(msg)
		if len(extra) > 0 {
			loc := []any{"body", "messages", i, role}
			for _, part := range strings.Split(extra[0], ".") {
				loc = append(loc, part)
			}
			return forbid(loc, json.RawMessage(`null`))
		}
		var m struct {
			ToolCallID string `json:"tool_call_id"`
			ToolCalls  []struct {
				ID string `json:"id"`
			} `json:"tool_calls"`
		}
		_ = json.Unmarshal(mustJSON(msg), &m)
		ids := []string{}
		if role == "tool" {
			ids = append(ids, m.ToolCallID)
		}
		for _, c := range m.ToolCalls {
			ids = append(ids, c.ID)
		}
		for _, id := range ids {
			if !mistralIDs.MatchString(id) {
				b, _ := json.Marshal(map[string]any{"object": "error",
					"message": fmt.Sprintf("Tool call id was %s but must be a-z, A-Z, 0-9, with a length of 9.", id),
					"type":    "invalid_request_message_error", "param": nil, "code": "3280"})
				return &refusal{http.StatusBadRequest, string(b)}
			}
		}
	}
	return nil
}

// groqTop are the request fields Groq accepts (of those a client of this
// package may send).
var groqTop = []string{"model", "messages", "tools", "tool_choice", "max_completion_tokens", "max_tokens",
	"temperature", "top_p", "stream", "stop", "seed", "parallel_tool_calls", "response_format", "user", "n",
	"reasoning_effort", "reasoning_format", "include_reasoning", "service_tier"}

// checkGroq refuses any field it does not know, on the request or on a
// message, the way Groq words it.
func checkGroq(top map[string]json.RawMessage, msgs []map[string]json.RawMessage) *refusal {
	groq := func(message string) *refusal {
		b, _ := json.Marshal(map[string]any{"error": map[string]any{"message": message, "type": "invalid_request_error"}})
		return &refusal{http.StatusBadRequest, string(b)}
	}
	keys := make([]string, 0, len(top))
	for k := range top {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		if !slices.Contains(groqTop, k) {
			return groq(fmt.Sprintf("property '%s' is unsupported", k))
		}
	}
	for i, msg := range msgs {
		if role, extra := unknownFields(msg); len(extra) > 0 {
			return groq(fmt.Sprintf("'messages.%d' : for 'role:%s' the following must be satisfied[('messages.%d' : property '%s' is unsupported)]",
				i, role, i, extra[0]))
		}
	}
	return nil
}

// checkOpenRouter refuses reasoning_details sent back changed: the
// signatures inside them are checked by the model's own provider.
func (is *issued) checkOpenRouter(msgs []map[string]json.RawMessage) *refusal {
	is.mu.Lock()
	defer is.mu.Unlock()
	for i, msg := range msgs {
		d, ok := msg["reasoning_details"]
		if !ok {
			continue
		}
		if !is.details[canonical(d)] {
			b, _ := json.Marshal(map[string]any{"error": map[string]any{"code": 400,
				"message": fmt.Sprintf("messages.%d.reasoning_details: the reasoning details were modified", i)}})
			return &refusal{http.StatusBadRequest, string(b)}
		}
	}
	return nil
}
