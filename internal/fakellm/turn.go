package fakellm

import (
	"fmt"
	"net/http"
	"strings"
	"time"
)

// Turn is one scripted answer of the server: a reply from the model or a
// fault. Build turns with the constructors below and refine replies with
// the With methods, which return a modified copy.
type Turn struct {
	kind    turnKind
	content *string
	calls   []Call
	finish  string
	usage   *Usage
	noUsage bool
	// tokenizer, when set, counts the usage (see WithTokenizerUsage).
	tokenizer string
	model     string
	status    int
	body      string
	header    http.Header
	fn        func(Request) Turn
	// cut, when set, sends only the first cutAt bytes of the body.
	cut   bool
	cutAt int
	delay time.Duration
}

type turnKind int

const (
	kindReply turnKind = iota
	kindStatus
	kindHang
	kindStall
	kindReset
	kindGarbage
	kindFunc
	kindRecorded
)

// Call is one tool call of a scripted reply. An empty ID is replaced by a
// unique generated one.
type Call struct {
	ID        string
	Name      string
	Arguments string
}

// Usage is the token usage a reply reports.
type Usage struct {
	PromptTokens     int64
	CompletionTokens int64
	CachedTokens     int64
}

// Text is a reply with text content and finish_reason "stop".
func Text(s string) Turn { return Turn{kind: kindReply, content: &s} }

// ToolCall is a reply calling one tool with the raw JSON arguments args,
// finish_reason "tool_calls".
func ToolCall(name, args string) Turn { return ToolCalls(Call{Name: name, Arguments: args}) }

// ToolCalls is a reply calling several tools at once, finish_reason
// "tool_calls".
func ToolCalls(calls ...Call) Turn {
	return Turn{kind: kindReply, calls: append([]Call(nil), calls...)}
}

// Status answers with an HTTP status and a body sent as application/json
// (add headers with WithHeader).
func Status(code int, body string) Turn { return Turn{kind: kindStatus, status: code, body: body} }

// APIError answers with status and an OpenAI error object.
func APIError(status int, errType, code, message string) Turn {
	return Status(status, errorBody(errType, code, message))
}

// RateLimited answers 429 rate_limit_exceeded, with a Retry-After header
// when retryAfter is not empty.
func RateLimited(retryAfter string) Turn {
	t := APIError(http.StatusTooManyRequests, "requests", "rate_limit_exceeded",
		"Rate limit reached for requests. Please try again later.")
	if retryAfter != "" {
		t = t.WithHeader("Retry-After", retryAfter)
	}
	return t
}

// ServerError answers status (500, 502, 503...) with a server_error object.
func ServerError(status int) Turn {
	return APIError(status, "server_error", "", "The server had an error while processing your request.")
}

// Unauthorized answers 401 invalid_api_key.
func Unauthorized() Turn {
	return APIError(http.StatusUnauthorized, "invalid_request_error", "invalid_api_key",
		"Incorrect API key provided.")
}

// InsufficientQuota answers 429 insufficient_quota: the spend limit is
// reached, which waiting does not fix.
func InsufficientQuota() Turn {
	return APIError(http.StatusTooManyRequests, "insufficient_quota", "insufficient_quota",
		"You exceeded your current quota, please check your plan and billing details.")
}

// ContextLengthExceeded answers 400 context_length_exceeded.
func ContextLengthExceeded() Turn {
	return APIError(http.StatusBadRequest, "invalid_request_error", "context_length_exceeded",
		"This model's maximum context length is 128000 tokens. However, your messages resulted in 131072 tokens. Please reduce the length of the messages.")
}

// Hang sends nothing and holds the request until the client gives up or
// the test ends.
func Hang() Turn { return Turn{kind: kindHang} }

// Stall sends the status line, headers and the start of a body, then holds
// the request like Hang.
func Stall() Turn { return Turn{kind: kindStall} }

// Reset reads the request and then resets the connection.
func Reset() Turn { return Turn{kind: kindReset} }

// Garbage answers 200 application/json with body, which need not be JSON.
func Garbage(body string) Turn { return Turn{kind: kindGarbage, body: body} }

// HTML answers with status and an HTML page sent as text/html, as a proxy
// or a load balancer in front of the API does.
func HTML(status int, page string) Turn {
	return Status(status, page).WithHeader("Content-Type", "text/html; charset=utf-8")
}

// Recorded answers 200 with body, a completion recorded from a real
// service, sent byte for byte. Under a mode, what the body carries that the
// provider wants back (reasoning, thought signatures) is remembered and
// checked on later requests.
func Recorded(body string) Turn { return Turn{kind: kindRecorded, body: body} }

// Func decides the answer when the request arrives: fn receives the decoded
// request and returns the turn to play. fn runs on the server's goroutine.
func Func(fn func(Request) Turn) Turn { return Turn{kind: kindFunc, fn: fn} }

// WithContent sets the text of a reply, alongside its tool calls if any.
func (t Turn) WithContent(s string) Turn {
	t.content = &s
	return t
}

// WithFinishReason overrides the finish_reason of a reply, for example
// "length" together with cut-off tool call arguments.
func (t Turn) WithFinishReason(reason string) Turn {
	t.finish = reason
	return t
}

// WithUsage sets the usage a reply reports. Without it a reply reports a
// usage derived from the sizes of the request and the reply.
func (t Turn) WithUsage(prompt, completion, cached int64) Turn {
	t.usage = &Usage{PromptTokens: prompt, CompletionTokens: completion, CachedTokens: cached}
	t.noUsage = false
	return t
}

// WithoutUsage leaves the usage field out of a reply.
func (t Turn) WithoutUsage() Turn {
	t.usage, t.noUsage = nil, true
	return t
}

// WithModel sets the model a reply names; by default it echoes the request.
func (t Turn) WithModel(model string) Turn {
	t.model = model
	return t
}

// WithHeader adds a response header to a reply or a status answer.
func (t Turn) WithHeader(key, value string) Turn {
	t.header = t.header.Clone()
	if t.header == nil {
		t.header = http.Header{}
	}
	t.header.Add(key, value)
	return t
}

// CutAfter sends the status and headers of a reply, a status answer or
// garbage, with a Content-Length announcing the whole body, then only the
// first n bytes of the body, and closes the connection: a body cut short.
func (t Turn) CutAfter(n int) Turn {
	t.cut, t.cutAt = true, max(n, 0)
	return t
}

// WithDelay holds the answer for d before sending it (or until the client
// goes away), as a slow model would: tests use it to keep requests in flight.
func (t Turn) WithDelay(d time.Duration) Turn {
	t.delay = d
	return t
}

// String describes the turn for failure messages.
func (t Turn) String() string { return t.describe() + t.cutNote() }

func (t Turn) describe() string {
	switch t.kind {
	case kindReply:
		var parts []string
		if t.content != nil {
			parts = append(parts, fmt.Sprintf("text %q", clip(*t.content)))
		}
		for _, c := range t.calls {
			parts = append(parts, fmt.Sprintf("call %s(%s)", c.Name, clip(c.Arguments)))
		}
		if len(parts) == 0 {
			return "empty reply"
		}
		return strings.Join(parts, ", ")
	case kindStatus:
		return fmt.Sprintf("status %d %s", t.status, clip(t.body))
	case kindHang:
		return "hang"
	case kindStall:
		return "stall"
	case kindReset:
		return "connection reset"
	case kindGarbage:
		return fmt.Sprintf("garbage %q", clip(t.body))
	case kindFunc:
		return "func"
	case kindRecorded:
		return fmt.Sprintf("recorded %q", clip(t.body))
	}
	return "unknown turn"
}

func (t Turn) cutNote() string {
	if !t.cut {
		return ""
	}
	return fmt.Sprintf(" cut after %d bytes", t.cutAt)
}

func clip(s string) string {
	const limit = 60
	if len(s) > limit {
		return s[:limit] + "…"
	}
	return s
}
