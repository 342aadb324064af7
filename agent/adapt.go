package agent

import (
	"fmt"
	"net/http"
	"regexp"
	"strings"
	"sync"

	"github.com/runner-dev/runner/internal/provider"
)

// Adaptations is what a run has learned about its endpoint from the
// server's refusals, on top of the provider profile: a request field the
// server refused, or one it said was missing. Each change is made at most
// once, in answer to a 400 or 422 that names the field, and holds for every
// later request of the run. Share one Adaptations between the models of a
// run that talk to the same endpoint with the same profile. It is safe for
// concurrent use; its zero value is ready to use.
type Adaptations struct {
	mu      sync.Mutex
	cap     *provider.CapField
	reason  *bool // echo reasoning (with reasoning_content on every turn)
	details *bool // echo reasoning_details
	extra   *bool // echo extra_content
	short   *bool // tool call ids as nine letters and digits
	tried   map[string]bool
}

// wireRules are the request rules in force for one request: the profile
// with what the run has learned applied.
type wireRules struct {
	cap                  provider.CapField
	echoReasoning        bool
	reasoningOnEveryTurn bool
	echoDetails          bool
	echoExtra            bool
	shortCallIDs         bool
}

// rules applies what was learned to p.
func (a *Adaptations) rules(p provider.Profile) wireRules {
	r := wireRules{cap: p.Cap, echoReasoning: p.EchoReasoning, reasoningOnEveryTurn: p.ReasoningOnEveryTurn,
		echoDetails: p.EchoReasoningDetails, echoExtra: p.EchoExtraContent, shortCallIDs: p.ShortCallIDs}
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.cap != nil {
		r.cap = *a.cap
	}
	if a.reason != nil {
		r.echoReasoning, r.reasoningOnEveryTurn = *a.reason, *a.reason
	}
	if a.details != nil {
		r.echoDetails = *a.details
	}
	if a.extra != nil {
		r.echoExtra = *a.extra
	}
	if a.short != nil {
		r.shortCallIDs = *a.short
	}
	return r
}

// sentFields says which of the adaptable fields a request carried.
type sentFields struct {
	maxTokens, maxCompletionTokens bool
	reasoning                      []string // the reasoning fields sent on assistant messages
	details, extra                 bool
}

// unsupported matches the ways servers say a field is not accepted.
var unsupported = regexp.MustCompile(`(?i)unsupported|not supported|extra inputs are not permitted|extra_forbidden|` +
	`unrecognized|unknown (?:parameter|field|name|argument)|not permitted|not allowed|unexpected|additional propert`)

// idShape matches a refusal of the shape of a tool call id (Mistral's
// "Tool call id was ... but must be a-z, A-Z, 0-9, with a length of 9").
var idShape = regexp.MustCompile(`(?i)tool.?call.?id.*(?:a-z|length of)`)

// missing matches the ways servers say a field must be sent.
var missing = regexp.MustCompile(`(?i)missing|must be passed back|is required|required field`)

// names reports whether text names field as a word of its own:
// max_tokens, not the max_tokens inside another name.
func names(text, field string) bool {
	for i := 0; ; {
		j := strings.Index(text[i:], field)
		if j < 0 {
			return false
		}
		j += i
		end := j + len(field)
		if (j == 0 || !isWordByte(text[j-1])) && (end == len(text) || !isWordByte(text[end])) {
			return true
		}
		i = j + 1
	}
}

func isWordByte(c byte) bool {
	return c == '_' || c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9'
}

// adapt answers a refusal of a request that carried sent with a change of
// the rules, and returns what changed; ok is false when the refusal names
// no field this can fix, or the fix was already tried.
func (a *Adaptations) adapt(e *ModelError, sent sentFields, current wireRules) (note string, ok bool) {
	if e.StatusCode != http.StatusBadRequest && e.StatusCode != http.StatusUnprocessableEntity {
		return "", false
	}
	text := e.Message + " " + e.Param + " " + e.body
	refused, absent := unsupported.MatchString(text), missing.MatchString(text)
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.tried == nil {
		a.tried = map[string]bool{}
	}
	try := func(key string) bool {
		if a.tried[key] {
			return false
		}
		a.tried[key] = true
		return true
	}
	setCap := func(c provider.CapField) { a.cap = &c }
	set := func(p **bool, v bool) { *p = &v }
	switch {
	case refused && sent.maxCompletionTokens && sent.maxTokens && names(text, "max_tokens") && try("cap"):
		setCap(provider.CapMaxCompletionTokens)
		return "the server refused max_tokens; sending the completion limit as max_completion_tokens only", true
	case refused && sent.maxCompletionTokens && names(text, "max_completion_tokens") && try("cap"):
		setCap(provider.CapMaxTokens)
		return "the server refused max_completion_tokens; sending the completion limit as max_tokens", true
	case refused && sent.maxTokens && !sent.maxCompletionTokens && names(text, "max_tokens") && try("cap"):
		setCap(provider.CapMaxCompletionTokens)
		return "the server refused max_tokens; sending the completion limit as max_completion_tokens", true
	case refused && sent.details && names(text, "reasoning_details") && try("details"):
		set(&a.details, false)
		return "the server refused reasoning_details; no longer sending it back", true
	case refused && len(sent.reasoning) > 0 && namesAny(text, sent.reasoning) && try("reasoning"):
		set(&a.reason, false)
		return fmt.Sprintf("the server refused %s on assistant messages; no longer sending reasoning back",
			strings.Join(sent.reasoning, " and ")), true
	case absent && !current.echoReasoning && names(text, "reasoning_content") && try("reasoning"):
		set(&a.reason, true)
		return "the server wants reasoning_content back on assistant messages; sending it as received", true
	case refused && sent.extra && names(text, "extra_content") && try("extra"):
		set(&a.extra, false)
		return "the server refused extra_content on tool calls; no longer sending it back", true
	case absent && !current.echoExtra && strings.Contains(strings.ToLower(text), "thought_signature") && try("extra"):
		set(&a.extra, true)
		return "the server wants thought signatures back; sending each tool call's extra_content as received", true
	case !current.shortCallIDs && idShape.MatchString(text) && try("ids"):
		set(&a.short, true)
		return "the server refused the shape of a tool call id; sending ids as nine letters and digits", true
	}
	return "", false
}

func namesAny(text string, fields []string) bool {
	for _, f := range fields {
		if names(text, f) {
			return true
		}
	}
	return false
}
