// Package provider names the Chat Completions services runner knows and
// describes, for each, the request fields it accepts and what it needs sent
// back: where the completion limit goes, which reasoning and per-call data
// must travel back with the history, and whether the server keeps to the
// completion limit at all. It is data only; the agent package applies it.
package provider

import (
	"fmt"
	"net"
	"net/url"
	"strings"
)

// Name names a service, or Auto.
type Name string

// The services runner knows. Auto picks one from the base URL's host and,
// when the host is unknown, adapts to the server's refusals.
const (
	Auto       Name = "auto"
	OpenAI     Name = "openai"
	Gemini     Name = "gemini"
	Anthropic  Name = "anthropic"
	DeepSeek   Name = "deepseek"
	Mistral    Name = "mistral"
	Groq       Name = "groq"
	OpenRouter Name = "openrouter"
	Ollama     Name = "ollama"
	VLLM       Name = "vllm"
	LiteLLM    Name = "litellm"
)

// CapField says which request field carries the completion limit.
type CapField int

// Where the completion limit goes.
const (
	// CapMaxCompletionTokens sends max_completion_tokens, the field OpenAI
	// documents (and the only one its reasoning models accept).
	CapMaxCompletionTokens CapField = iota
	// CapMaxTokens sends the older max_tokens.
	CapMaxTokens
	// CapBoth sends both with the same value, for servers whose version
	// decides which of the two they read and which ignore the other.
	CapBoth
)

// String names the field(s) as they appear on the wire.
func (c CapField) String() string {
	switch c {
	case CapMaxTokens:
		return "max_tokens"
	case CapBoth:
		return "max_tokens and max_completion_tokens"
	}
	return "max_completion_tokens"
}

// Profile is what runner sends to a service and what it sends back.
type Profile struct {
	Name Name
	// Cap is where the completion limit goes.
	Cap CapField
	// EchoReasoning sends the reasoning an assistant message came with back
	// on that message, in the field and with the text it arrived in
	// (reasoning_content, reasoning).
	EchoReasoning bool
	// ReasoningOnEveryTurn also sends reasoning_content, empty, on an
	// assistant message that came with none: DeepSeek's thinking mode
	// refuses a history whose tool-call turns lack the field.
	ReasoningOnEveryTurn bool
	// EchoReasoningDetails sends reasoning_details (OpenRouter's structured,
	// signed reasoning) back exactly as received.
	EchoReasoningDetails bool
	// EchoExtraContent sends each tool call's extra_content (Gemini's
	// thought signature) back exactly as received.
	EchoExtraContent bool
	// ShortCallIDs sends every tool call id as nine letters and digits
	// (an id of another shape is replaced by one derived from it), the only
	// shape Mistral's validator accepts.
	ShortCallIDs bool
	// CapHonoured is false for a service known to generate past the
	// completion limit it is sent; the budget then reserves for a reply as
	// long as the context window.
	CapHonoured bool
}

var profiles = map[Name]Profile{
	Auto:       {Name: Auto, Cap: CapMaxCompletionTokens, EchoExtraContent: true, CapHonoured: true},
	LiteLLM:    {Name: LiteLLM, Cap: CapMaxCompletionTokens, EchoExtraContent: true, CapHonoured: true},
	OpenAI:     {Name: OpenAI, Cap: CapMaxCompletionTokens, CapHonoured: true},
	Gemini:     {Name: Gemini, Cap: CapMaxTokens, EchoExtraContent: true, CapHonoured: true},
	Anthropic:  {Name: Anthropic, Cap: CapMaxCompletionTokens, CapHonoured: true},
	DeepSeek:   {Name: DeepSeek, Cap: CapMaxTokens, EchoReasoning: true, ReasoningOnEveryTurn: true, CapHonoured: true},
	Mistral:    {Name: Mistral, Cap: CapMaxTokens, ShortCallIDs: true, CapHonoured: true},
	Groq:       {Name: Groq, Cap: CapMaxCompletionTokens, CapHonoured: true},
	OpenRouter: {Name: OpenRouter, Cap: CapMaxTokens, EchoReasoningDetails: true, CapHonoured: true},
	Ollama:     {Name: Ollama, Cap: CapBoth, EchoReasoning: true, CapHonoured: false},
	VLLM:       {Name: VLLM, Cap: CapBoth, CapHonoured: true},
}

// order is the order names are listed in, for messages and help.
var order = []Name{Auto, OpenAI, Gemini, Anthropic, DeepSeek, Mistral, Groq, OpenRouter, Ollama, VLLM, LiteLLM}

// Names lists the valid names, auto first.
func Names() []string {
	names := make([]string, len(order))
	for i, n := range order {
		names[i] = string(n)
	}
	return names
}

// Parse returns the Name s spells (case-insensitively), or an error listing
// the valid names.
func Parse(s string) (Name, error) {
	n := Name(strings.ToLower(strings.TrimSpace(s)))
	if _, ok := profiles[n]; ok {
		return n, nil
	}
	return "", fmt.Errorf("unknown provider %q: want one of %s", s, strings.Join(Names(), ", "))
}

// ProfileOf returns the profile of n; Auto's for a name it does not know.
func ProfileOf(n Name) Profile {
	if p, ok := profiles[n]; ok {
		return p
	}
	return profiles[Auto]
}

// hosts maps API hosts to the service behind them. A host matches itself
// and its subdomains.
var hosts = []struct {
	host string
	name Name
}{
	{"api.openai.com", OpenAI},
	{"generativelanguage.googleapis.com", Gemini},
	{"aiplatform.googleapis.com", Gemini},
	{"api.anthropic.com", Anthropic},
	{"api.deepseek.com", DeepSeek},
	{"api.mistral.ai", Mistral},
	{"codestral.mistral.ai", Mistral},
	{"api.groq.com", Groq},
	{"openrouter.ai", OpenRouter},
	{"ollama.com", Ollama},
}

// ollamaPort is the port an Ollama server listens on by default.
const ollamaPort = "11434"

// FromURL names the service behind a base URL from its host (and, for a
// local Ollama, its default port); Auto when the host is unknown or the
// URL does not parse. An empty URL is OpenAI's, the SDK's default.
func FromURL(baseURL string) Name {
	if strings.TrimSpace(baseURL) == "" {
		return OpenAI
	}
	u, err := url.Parse(baseURL)
	if err != nil {
		return Auto
	}
	host := strings.ToLower(u.Hostname())
	for _, h := range hosts {
		if host == h.host || strings.HasSuffix(host, "."+h.host) {
			return h.name
		}
	}
	// Vertex AI's regional hosts: us-central1-aiplatform.googleapis.com.
	if strings.HasSuffix(host, "-aiplatform.googleapis.com") {
		return Gemini
	}
	if u.Port() == ollamaPort {
		return Ollama
	}
	if ip := net.ParseIP(host); ip == nil && strings.Contains(host, "ollama") {
		return Ollama
	}
	return Auto
}

// Resolve returns the profile for a configured name: the name's own, or,
// for Auto, the one the base URL's host names.
func Resolve(n Name, baseURL string) Profile {
	if n == "" || n == Auto {
		n = FromURL(baseURL)
	}
	return ProfileOf(n)
}
