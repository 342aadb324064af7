package agent

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"time"
)

// Roles a Message may carry.
const (
	RoleSystem    = "system"
	RoleUser      = "user"
	RoleAssistant = "assistant"
	RoleTool      = "tool"
)

// Finish reasons a Response may carry. Servers may send others; they are
// passed through unchanged.
const (
	FinishStop      = "stop"           // the model ended its turn
	FinishToolCalls = "tool_calls"     // the model asks for tool calls
	FinishLength    = "length"         // cut off by MaxCompletionTokens or the context window
	FinishFilter    = "content_filter" // withheld by the server's content filter
)

// Model is a chat model that can call tools. Implementations are safe for
// concurrent use.
type Model interface {
	// Complete sends the conversation in req and returns the model's next
	// message. Transient failures (connection errors, timeouts, rate limits,
	// server errors) are retried inside Complete; the error returned is
	// final. Callers branch on ErrContextLength, ErrAuth, ErrQuota and
	// ErrBadResponse with errors.Is, and read the status of any other API
	// refusal with errors.As(err, **ModelError). Cancelling ctx stops
	// Complete at once and returns ctx's error without retrying.
	Complete(ctx context.Context, req Request) (Response, error)
}

// Message is one entry of a conversation.
type Message struct {
	// Role is one of RoleSystem, RoleUser, RoleAssistant and RoleTool.
	Role string
	// Content is the text of the message. It may be empty on an assistant
	// message that only calls tools.
	Content string
	// ToolCalls are the calls an assistant message asks for, in order.
	ToolCalls []ToolCall
	// ToolCallID names the call a tool message answers.
	ToolCallID string
	// Name is the participant name of a user or system message, or the tool
	// name on a tool message (kept for the trajectory; the wire format of
	// tool messages has no name).
	Name string
	// Reasoning is the reasoning text an assistant message came with, as
	// the server sent it, and ReasoningField the response field it came in
	// ("reasoning_content", "reasoning"); ReasoningField is empty when the
	// reasoning came inside the content (Mistral's thinking chunks) and has
	// no field of its own to go back in. ReasoningDetails is the raw
	// reasoning_details array (OpenRouter), kept byte for byte. Providers
	// that need them on the next request get them back exactly as received
	// (see internal/provider).
	Reasoning        string
	ReasoningField   string
	ReasoningDetails json.RawMessage
	// Extra is the message's own extra_content as the server sent it
	// (Gemini 2.5 puts its thought signature there rather than on the
	// calls), kept byte for byte to be sent back.
	Extra json.RawMessage
}

// ToolCall is one function call requested by the model.
type ToolCall struct {
	ID   string
	Name string
	// Arguments is the raw JSON text as sent by the model. It is not
	// validated: a reply cut off by FinishLength may hold a truncated string.
	// A server that sent the arguments as a JSON object rather than a string
	// gets the object's text.
	Arguments string
	// Extra is the call's extra_content as the server sent it (Gemini puts
	// its thought signature there), kept byte for byte to be sent back.
	Extra json.RawMessage
	// Unreadable, when set, says why the model's call could not be read
	// (a text protocol's call that breaks its grammar or the tool's
	// schema): the call is never run, and the model is told this reason.
	Unreadable string
}

// ToolSpec describes a function the model may call.
type ToolSpec struct {
	Name        string
	Description string
	// Parameters is the JSON schema of the arguments object. Empty means the
	// function takes no arguments.
	Parameters json.RawMessage
}

// Request is one completion request.
type Request struct {
	Model    string
	Messages []Message
	Tools    []ToolSpec
	// MaxCompletionTokens caps the reply; zero leaves it to the server.
	MaxCompletionTokens int64
	// Temperature is left to the server when nil.
	Temperature *float64
	// Attempts, when set, pays for each attempt Complete makes; the
	// completion limit it grants replaces MaxCompletionTokens.
	Attempts AttemptBudget
}

// AttemptBudget pays for the attempts of one Complete call, which calls it
// from one goroutine at a time. A Model that retries calls Begin before each
// attempt and Failed after each attempt that failed; the caller settles the
// attempt that succeeded from the Response's usage.
type AttemptBudget interface {
	// Begin is called before an attempt is sent and returns the completion
	// limit to send with it. An error ends Complete with that error, and the
	// attempt is not made.
	Begin() (maxCompletionTokens int64, err error)
	// Failed is called after an attempt failed, with its error, before
	// Complete retries or returns.
	Failed(err error)
}

// CapKeeper is implemented by a Model that knows whether its server keeps
// to the completion limit a request sets. A Model that does not implement
// it is taken to keep to it.
type CapKeeper interface {
	// KeepsCompletionCap reports whether replies stay within the
	// completion limit sent with the request.
	KeepsCompletionCap() bool
}

// Usage counts the tokens of one completion as the server bills them.
type Usage struct {
	PromptTokens int64 `json:"prompt_tokens"`
	// CachedTokens is the part of PromptTokens served from the prompt cache.
	CachedTokens     int64 `json:"cached_tokens,omitempty"`
	CompletionTokens int64 `json:"completion_tokens"`
}

// Response is the model's reply to one Request.
type Response struct {
	// Message is the assistant message, Role RoleAssistant.
	Message      Message
	FinishReason string
	Usage        Usage
	// UsageEstimated is true when the server sent no usage and Usage was
	// estimated from the size of the request and reply. An estimate is not an
	// upper bound; budget checks must use their own bound.
	UsageEstimated bool
	// Model is the model the server says answered, which may be a dated
	// version of Request.Model.
	Model string
	// ID is the server's identifier of the completion.
	ID string
}

var (
	// ErrContextLength means the conversation does not fit the model's
	// context window; the caller should shorten it rather than retry.
	ErrContextLength = errors.New("context window exceeded")
	// ErrAuth means the server refused the credentials (HTTP 401 or 403).
	ErrAuth = errors.New("authentication refused")
	// ErrQuota means the account's spend limit or credit is exhausted; unlike
	// a rate limit, waiting does not help.
	ErrQuota = errors.New("quota exhausted")
	// ErrBadResponse means the server answered success with a body that is
	// not a chat completion: an error page from a proxy, a body cut short,
	// JSON of another kind, nothing at all. It is retried like a 5xx; when
	// it persists, the base URL may not point at a Chat Completions API.
	ErrBadResponse = errors.New("malformed response")
	// ErrAttemptTimeout means one attempt outlived the per-attempt timeout.
	// Complete retries it; it is final only once retries run out.
	ErrAttemptTimeout = errors.New("attempt timed out")
)

// ModelError is a refusal by the model API: an HTTP status of 400 or more.
// It unwraps to ErrContextLength, ErrAuth or ErrQuota when the status and
// the server's error code say so.
type ModelError struct {
	StatusCode int
	// Type, Code and Param are the server's error.type, error.code and
	// error.param (the request field it objects to), if any.
	Type  string
	Code  string
	Param string
	// Message is the server's error.message (or the start of a body that
	// is not an error object), with anything resembling an API key removed.
	Message string
	// RetryAfter is the wait the server asked for with Retry-After-Ms or
	// Retry-After; zero when it asked for none.
	RetryAfter time.Duration
	// HasRetryAfter tells a requested wait of zero from no request.
	HasRetryAfter bool

	kind error
	// body is the start of the error body (redacted), which names the
	// request field a refusal is about more reliably than the message.
	body string
}

// Error returns "model API: <status> <text>[ (<code>)]: <message>".
func (e *ModelError) Error() string {
	var b strings.Builder
	fmt.Fprintf(&b, "model API: %d", e.StatusCode)
	if text := http.StatusText(e.StatusCode); text != "" {
		b.WriteString(" " + text)
	}
	switch {
	case e.Code != "":
		fmt.Fprintf(&b, " (%s)", e.Code)
	case e.Type != "":
		fmt.Fprintf(&b, " (%s)", e.Type)
	}
	if e.Message != "" {
		b.WriteString(": " + e.Message)
	}
	return b.String()
}

// Unwrap returns the named error the refusal stands for, or nil.
func (e *ModelError) Unwrap() error { return e.kind }

// refusalKind names what a refusal means for the caller, from its status and
// the server's error code, type and message.
func refusalKind(e *ModelError) error {
	msg := strings.ToLower(e.Message)
	switch {
	case e.StatusCode == http.StatusUnauthorized || e.StatusCode == http.StatusForbidden:
		return ErrAuth
	case e.Code == "insufficient_quota" || e.Type == "insufficient_quota" ||
		e.StatusCode == http.StatusPaymentRequired ||
		strings.Contains(msg, "exceeded your current quota"):
		return ErrQuota
	case e.Code == "context_length_exceeded" ||
		(e.StatusCode == http.StatusBadRequest || e.StatusCode == http.StatusRequestEntityTooLarge) &&
			(strings.Contains(msg, "maximum context length") || strings.Contains(msg, "context length") ||
				strings.Contains(msg, "context window")):
		return ErrContextLength
	}
	return nil
}

// parseErrorBody reads the server's explanation from an error body: the
// OpenAI form {"error":{"message","type","code","param"}}, the same wrapped
// in an array (Gemini), and the looser forms compatible servers send
// ({"error":"..."}, {"message":"..."}, {"detail":"..."}, and the
// validation errors of Python servers, {"detail":[{"loc","msg"}]}, also
// under "message" as Mistral sends them), or else the start of the body
// as text.
func parseErrorBody(body []byte) *ModelError {
	if trimmed := bytes.TrimSpace(body); len(trimmed) > 0 && trimmed[0] == '[' {
		var list []json.RawMessage
		if json.Unmarshal(trimmed, &list) == nil && len(list) > 0 {
			body = list[0]
		}
	}
	var env struct {
		Error   json.RawMessage `json:"error"`
		Message json.RawMessage `json:"message"`
		Detail  json.RawMessage `json:"detail"`
		Type    string          `json:"type"`
		Code    any             `json:"code"`
	}
	if json.Unmarshal(body, &env) != nil {
		return &ModelError{Message: excerpt(body)}
	}
	var obj struct {
		Message string `json:"message"`
		Type    string `json:"type"`
		Code    any    `json:"code"`
		Param   any    `json:"param"`
	}
	if json.Unmarshal(env.Error, &obj) == nil && (obj.Message != "" || obj.Type != "" || obj.Code != nil) {
		e := &ModelError{Message: obj.Message, Type: obj.Type}
		if obj.Code != nil {
			e.Code = fmt.Sprint(obj.Code)
		}
		if s, ok := obj.Param.(string); ok {
			e.Param = s
		}
		return e
	}
	var text string
	if json.Unmarshal(env.Error, &text) == nil && text != "" {
		return &ModelError{Message: text}
	}
	for _, raw := range []json.RawMessage{env.Message, env.Detail} {
		if s := detailText(raw); s != "" {
			e := &ModelError{Message: s, Type: env.Type}
			if c, ok := env.Code.(string); ok {
				e.Code = c
			}
			return e
		}
	}
	return &ModelError{Message: excerpt(body)}
}

// detailText reads a message that is a string, or a validation report
// ({"detail":[{"loc":[...],"msg":"..."}]} or the list alone) as
// "body.field: message; ...".
func detailText(raw json.RawMessage) string {
	if len(raw) == 0 {
		return ""
	}
	var s string
	if json.Unmarshal(raw, &s) == nil {
		return s
	}
	type item struct {
		Loc []any  `json:"loc"`
		Msg string `json:"msg"`
	}
	var items []item
	var wrapped struct {
		Detail []item `json:"detail"`
	}
	if json.Unmarshal(raw, &wrapped) == nil && len(wrapped.Detail) > 0 {
		items = wrapped.Detail
	} else if json.Unmarshal(raw, &items) != nil {
		return ""
	}
	var parts []string
	for _, it := range items {
		loc := make([]string, len(it.Loc))
		for i, l := range it.Loc {
			loc[i] = fmt.Sprint(l)
		}
		parts = append(parts, strings.Join(loc, ".")+": "+it.Msg)
	}
	return strings.Join(parts, "; ")
}

// excerpt returns the start of a body as one line of text, for messages.
func excerpt(body []byte) string {
	const limit = 200
	s := strings.Join(strings.Fields(string(body)), " ")
	if len(s) > limit {
		s = strings.ToValidUTF8(s[:limit], "") + "…"
	}
	return s
}
