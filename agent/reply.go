package agent

import (
	"bytes"
	"encoding/json"
	"fmt"
	"math"
	"strconv"
	"strings"
)

// The body of a chat completion, read the way compatible servers actually
// write it rather than the way OpenAI documents it: content as a string, an
// array of parts or null; a tool call with an empty, null or missing id, no
// type, and arguments as a JSON string or as a JSON object; reasoning in
// reasoning_content, reasoning or reasoning_details; per-call data in
// extra_content; cached prompt tokens under any of the names servers use.
// Anything else in the body is ignored.

type wireCompletion struct {
	ID      nullString      `json:"id"`
	Model   nullString      `json:"model"`
	Choices []wireChoice    `json:"choices"`
	Usage   json.RawMessage `json:"usage"`
}

type wireChoice struct {
	Message      *wireReply `json:"message"`
	FinishReason nullString `json:"finish_reason"`
}

type wireReply struct {
	Content          json.RawMessage `json:"content"`
	Refusal          nullString      `json:"refusal"`
	ReasoningContent nullString      `json:"reasoning_content"`
	Reasoning        json.RawMessage `json:"reasoning"`
	ReasoningDetails json.RawMessage `json:"reasoning_details"`
	ToolCalls        []wireCall      `json:"tool_calls"`
	Extra            json.RawMessage `json:"extra_content"`
	// FunctionCall is the single call of the API before tool_calls, which
	// some servers still send.
	FunctionCall *wireFunction `json:"function_call"`
}

type wireCall struct {
	ID       json.RawMessage `json:"id"`
	Type     nullString      `json:"type"`
	Function wireFunction    `json:"function"`
	Custom   *struct {
		Name  string `json:"name"`
		Input string `json:"input"`
	} `json:"custom"`
	Extra json.RawMessage `json:"extra_content"`
}

type wireFunction struct {
	Name      nullString      `json:"name"`
	Arguments json.RawMessage `json:"arguments"`
}

// nullString is a string that may be null or absent, both read as "".
type nullString string

func (s *nullString) UnmarshalJSON(b []byte) error {
	if bytes.Equal(bytes.TrimSpace(b), []byte("null")) {
		*s = ""
		return nil
	}
	var v string
	if err := json.Unmarshal(b, &v); err != nil {
		return err
	}
	*s = nullString(v)
	return nil
}

// decodeCompletion reads a completion body. It fails only when the body is
// not a chat completion at all: not JSON, no choices, or no message in the
// first choice.
func decodeCompletion(raw []byte) (*wireCompletion, error) {
	var cc wireCompletion
	if err := json.Unmarshal(raw, &cc); err != nil {
		return nil, err
	}
	return &cc, nil
}

// toResponse maps the first choice of cc onto a Response, estimating usage
// when the server sent none.
func (cc *wireCompletion) toResponse(requestBytes int) Response {
	choice := cc.Choices[0]
	w := choice.Message
	msg := Message{Role: RoleAssistant}
	msg.Content, msg.Reasoning = contentText(w.Content)
	if msg.Content == "" && w.Refusal != "" {
		msg.Content = string(w.Refusal)
	}
	switch reasoning := rawString(w.Reasoning); {
	case w.ReasoningContent != "":
		msg.Reasoning, msg.ReasoningField = string(w.ReasoningContent), "reasoning_content"
	case reasoning != "":
		msg.Reasoning, msg.ReasoningField = reasoning, "reasoning"
	}
	msg.ReasoningDetails = rawValue(w.ReasoningDetails)
	msg.Extra = rawValue(w.Extra)
	calls := w.ToolCalls
	if len(calls) == 0 && w.FunctionCall != nil && w.FunctionCall.Name != "" {
		calls = []wireCall{{Function: *w.FunctionCall}}
	}
	replyBytes := len(msg.Content) + len(msg.Reasoning) + len(msg.ReasoningDetails) + len(msg.Extra)
	for _, c := range calls {
		call := ToolCall{ID: rawString(c.ID), Name: string(c.Function.Name), Arguments: argumentsText(c.Function.Arguments)}
		if c.Type == "custom" && c.Custom != nil {
			call.Name, call.Arguments = c.Custom.Name, c.Custom.Input
		}
		call.Extra = rawValue(c.Extra)
		replyBytes += len(call.Name) + len(call.Arguments) + len(call.Extra)
		msg.ToolCalls = append(msg.ToolCalls, call)
	}
	r := Response{Message: msg, FinishReason: string(choice.FinishReason), Model: string(cc.Model), ID: string(cc.ID)}
	r.Usage = readUsage(cc.Usage)
	if r.Usage.PromptTokens == 0 && r.Usage.CompletionTokens == 0 {
		r.Usage = Usage{PromptTokens: tokensOf(requestBytes), CompletionTokens: tokensOf(replyBytes)}
		r.UsageEstimated = true
	}
	return r
}

// contentText reads content given as a string, null, or an array of parts:
// the text parts make the text, the thinking parts (Mistral) the reasoning.
func contentText(raw json.RawMessage) (text, reasoning string) {
	raw = bytes.TrimSpace(raw)
	if len(raw) == 0 || bytes.Equal(raw, []byte("null")) {
		return "", ""
	}
	var s string
	if json.Unmarshal(raw, &s) == nil {
		return s, ""
	}
	var parts []struct {
		Type     string          `json:"type"`
		Text     string          `json:"text"`
		Thinking json.RawMessage `json:"thinking"`
	}
	if json.Unmarshal(raw, &parts) != nil {
		return "", ""
	}
	var t, r strings.Builder
	for _, p := range parts {
		switch p.Type {
		case "thinking":
			inner, _ := contentText(p.Thinking)
			r.WriteString(inner)
		case "text", "":
			t.WriteString(p.Text)
		}
	}
	return t.String(), r.String()
}

// rawValue returns a copy of raw, or nil when it is absent or null.
func rawValue(raw json.RawMessage) json.RawMessage {
	raw = bytes.TrimSpace(raw)
	if len(raw) == 0 || bytes.Equal(raw, []byte("null")) {
		return nil
	}
	return append(json.RawMessage(nil), raw...)
}

// rawString returns the JSON string in raw, or "" for anything else (null,
// absent, a number).
func rawString(raw json.RawMessage) string {
	var s string
	if json.Unmarshal(raw, &s) != nil {
		return ""
	}
	return s
}

// argumentsText returns a call's arguments as JSON text: the string the
// API specifies, or the text of whatever JSON value a server sent instead
// (an object, from Ollama), compacted; "" when absent or null.
func argumentsText(raw json.RawMessage) string {
	raw = bytes.TrimSpace(raw)
	if len(raw) == 0 || bytes.Equal(raw, []byte("null")) {
		return ""
	}
	var s string
	if json.Unmarshal(raw, &s) == nil {
		return s
	}
	var buf bytes.Buffer
	if json.Compact(&buf, raw) != nil {
		return string(raw)
	}
	return buf.String()
}

// wireUsage holds every usage field a server is known to report.
type wireUsage struct {
	PromptTokens     count `json:"prompt_tokens"`
	CompletionTokens count `json:"completion_tokens"`
	TotalTokens      count `json:"total_tokens"`
	// Cached prompt tokens, by the name each server gives them.
	PromptTokensDetails  *cachedDetails `json:"prompt_tokens_details"` // OpenAI and most others
	PromptTokenDetails   *cachedDetails `json:"prompt_token_details"`  // Mistral, beside the above
	InputTokensDetails   *cachedDetails `json:"input_tokens_details"`  // servers mixing in the Responses API's names
	CachedTokens         count          `json:"cached_tokens"`
	PromptCacheHitTokens count          `json:"prompt_cache_hit_tokens"` // DeepSeek
	NumCachedTokens      count          `json:"num_cached_tokens"`       // Mistral
	CacheReadInputTokens count          `json:"cache_read_input_tokens"` // Anthropic's name, through proxies
}

type cachedDetails struct {
	CachedTokens count `json:"cached_tokens"`
}

func (d *cachedDetails) cached() count {
	if d == nil {
		return 0
	}
	return d.CachedTokens
}

// readUsage reads a usage object. Cached tokens are the largest count any
// known field reports. Tokens the server counts in total_tokens but in
// neither prompt_tokens nor completion_tokens (Gemini's thoughts, through
// some gateways) are output the server billed, and count as completion
// tokens. A usage object that cannot be read counts as none.
func readUsage(raw json.RawMessage) Usage {
	var w wireUsage
	if len(bytes.TrimSpace(raw)) == 0 || json.Unmarshal(raw, &w) != nil {
		return Usage{}
	}
	u := Usage{PromptTokens: int64(w.PromptTokens), CompletionTokens: int64(w.CompletionTokens)}
	if hidden := int64(w.TotalTokens) - u.PromptTokens - u.CompletionTokens; hidden > 0 {
		u.CompletionTokens += hidden
	}
	for _, c := range []count{w.PromptTokensDetails.cached(), w.PromptTokenDetails.cached(), w.InputTokensDetails.cached(),
		w.CachedTokens, w.PromptCacheHitTokens, w.NumCachedTokens, w.CacheReadInputTokens} {
		u.CachedTokens = max(u.CachedTokens, int64(c))
	}
	return u
}

// count is a token count as a server writes it: an integer, a number with
// a fraction (rounded up), a numeric string, or null (zero).
type count int64

func (c *count) UnmarshalJSON(b []byte) error {
	s := strings.Trim(strings.TrimSpace(string(b)), `"`)
	if s == "" || s == "null" {
		*c = 0
		return nil
	}
	if n, err := strconv.ParseInt(s, 10, 64); err == nil {
		*c = count(n)
		return nil
	}
	f, err := strconv.ParseFloat(s, 64)
	if err != nil || math.IsNaN(f) || math.IsInf(f, 0) {
		return fmt.Errorf("token count %s is not a number", b)
	}
	*c = count(min(math.Ceil(f), math.MaxInt64/2))
	return nil
}
