package agent

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"regexp"
	"slices"
	"strings"
	"sync"
)

// The tool protocols: how the tools are offered to the model and its
// calls read back.
const (
	// ProtocolNative uses the API's own tools and tool_calls.
	ProtocolNative = "native"
	// ProtocolXML describes the tools in the system message and reads the
	// calls from the reply's text, in the grammar of parseTextCalls.
	ProtocolXML = "xml"
	// ProtocolAuto uses native tools until the server refuses them (see
	// refusesTools), then xml for the rest of the task.
	ProtocolAuto = "auto"
)

// Protocols lists the protocol names, the default first.
func Protocols() []string { return []string{ProtocolNative, ProtocolXML, ProtocolAuto} }

// PromptFramer is implemented by a Model that sends a request in a form of
// its own rather than as the JSON of its messages and tool definitions (a
// text tool protocol). The agent adds what FramingBytes reports to every
// prompt bound, so a reservation covers what is really sent.
type PromptFramer interface {
	// FramingBytes bounds the bytes the Model's form adds to the JSON of
	// msgs and tools. counted is how many leading messages the server's
	// count of an earlier request covers (0: none); the Model says whether
	// that count was of its form, and adds for the rest what it must.
	FramingBytes(msgs []Message, tools []ToolSpec, counted int) int
}

// framing is what the model's own request form adds to a prompt bound, in
// tokens (a byte is at most one token).
func (a *Agent) framing(msgs []Message, tools []ToolSpec, counted int) int64 {
	if f, ok := a.model.(PromptFramer); ok {
		return int64(f.FramingBytes(msgs, tools, counted))
	}
	return 0
}

// protocolOf names the protocol model speaks, for the trajectory.
func protocolOf(m Model) string {
	if p, ok := m.(interface{ Protocol() string }); ok {
		return p.Protocol()
	}
	return ProtocolNative
}

// WithProtocol returns model speaking the named protocol: model itself for
// native, or a wrapper for xml and auto. onFallback, if not nil, is called
// once, when auto falls back to xml, with the reason (the server's
// refusal); the wrapper is then xml for the rest of its life, which is one
// task's.
func WithProtocol(model Model, name string, onFallback func(reason string)) (Model, error) {
	switch name {
	case "", ProtocolNative:
		return model, nil
	case ProtocolXML, ProtocolAuto:
		return &textProtocol{inner: model, auto: name == ProtocolAuto, onFallback: onFallback}, nil
	}
	return nil, fmt.Errorf("unknown tool protocol %q (want %s)", name, strings.Join(Protocols(), ", "))
}

// textProtocol is the text tool protocol over a Chat Completions model:
// it sends the tools as text in the system message, tool results as user
// messages and earlier calls as the text they were made in, never the
// API's tools; and it reads the calls from the reply's text, strictly
// (see parseTextCalls and callArguments). A call that cannot be read comes
// back with ToolCall.Unreadable set, so that it is never run and the model
// is told why; the agent counts it as a malformed call.
type textProtocol struct {
	inner      Model
	auto       bool
	onFallback func(string)

	mu       sync.Mutex
	text     bool // auto: fell back to text
	answered bool // a text request was answered since text began
}

var (
	_ Model        = (*textProtocol)(nil)
	_ PromptFramer = (*textProtocol)(nil)
	_ CapKeeper    = (*textProtocol)(nil)
)

// Protocol is xml, or auto until it falls back.
func (m *textProtocol) Protocol() string {
	if m.auto && !m.usesText() {
		return ProtocolAuto
	}
	return ProtocolXML
}

// KeepsCompletionCap is the wrapped model's.
func (m *textProtocol) KeepsCompletionCap() bool {
	k, ok := m.inner.(CapKeeper)
	return !ok || k.KeepsCompletionCap()
}

func (m *textProtocol) usesText() bool {
	m.mu.Lock()
	defer m.mu.Unlock()
	return !m.auto || m.text
}

// Complete implements Model. Under auto, a native request the server
// refuses for its tools is sent again, at once and as text, within the
// same call: the refused attempt was settled (not billed: a 4xx), and the
// text attempt is paid for by req.Attempts like any retry, under a
// reservation that already covered the text form (see FramingBytes).
func (m *textProtocol) Complete(ctx context.Context, req Request) (Response, error) {
	if !m.usesText() {
		resp, err := m.inner.Complete(ctx, req)
		if len(req.Tools) == 0 || !refusesTools(err) {
			return resp, err
		}
		m.fallBack(err)
	}
	sent := req
	sent.Tools = nil
	sent.Messages = renderText(req.Messages, req.Tools)
	resp, err := m.inner.Complete(ctx, sent)
	if err != nil {
		return resp, err
	}
	m.mu.Lock()
	m.answered = true
	m.mu.Unlock()
	resp.Message = readReply(resp.Message, req.Tools)
	return resp, nil
}

func (m *textProtocol) fallBack(refusal error) {
	m.mu.Lock()
	first := !m.text
	m.text, m.answered = true, false
	m.mu.Unlock()
	if first && m.onFallback != nil {
		m.onFallback("the server refused native tool calls (" + refusal.Error() + "); using the xml text protocol for the rest of the task")
	}
}

// toolRefusal matches a refusal's words about tools or function calling.
var toolRefusal = regexp.MustCompile(`(?i)\btools\b|tool[ _-]?choice|tool[ _-]?(use|calling|support)|function[ _-]?call|\bfunctions\b|support(s|ed)? tool`)

// refusesTools reports whether err is the server refusing the request's
// tools: a 4xx other than a credential, quota, rate or size refusal, whose
// error names tools, tool_choice or functions as its param, or speaks of
// tools or function calling (vLLM without --enable-auto-tool-choice,
// Ollama's "does not support tools", llama.cpp without --jinja, TGI). A
// server that takes tools but ignores them cannot be told from a model
// that chose not to call one; protocol: xml is for that.
func refusesTools(err error) bool {
	var me *ModelError
	if err == nil || !errors.As(err, &me) || errors.Is(err, ErrContextLength) || errors.Is(err, ErrAuth) || errors.Is(err, ErrQuota) {
		return false
	}
	switch {
	case me.StatusCode < 400 || me.StatusCode >= 500,
		slices.Contains([]int{http.StatusNotFound, http.StatusRequestTimeout, http.StatusRequestEntityTooLarge, http.StatusTooManyRequests}, me.StatusCode):
		return false
	case slices.Contains([]string{"tools", "tool_choice", "functions", "function_call"}, me.Param):
		return true
	}
	text := me.Message + " " + me.body
	return toolRefusal.MatchString(text) && !idShape.MatchString(text)
}

// readReply reads the calls of a reply's text into its ToolCalls, in
// order. Calls the server sent natively are dropped: only the text is the
// protocol. A reply whose only calls sit in code blocks gets one
// unreadable call saying so, rather than ending the task as a reply
// without calls would.
func readReply(msg Message, tools []ToolSpec) Message {
	msg.ToolCalls = nil
	calls, fenced := parseTextCalls(msg.Content)
	for _, c := range calls {
		tc := ToolCall{Name: c.name, Arguments: "{}", Unreadable: c.err}
		if c.err == "" {
			if spec, ok := specNamed(tools, c.name); ok {
				args, err := callArguments(spec, c.params)
				if err != nil {
					tc.Unreadable = fmt.Sprintf("the call of %s at line %d: %v", c.name, c.line, err)
				} else {
					tc.Arguments = args
				}
			} else {
				// An unknown tool is left to the agent, which names the
				// tools; the arguments are kept as written, for the record.
				tc.Arguments = stringArguments(c.params)
			}
		}
		msg.ToolCalls = append(msg.ToolCalls, tc)
	}
	if len(calls) == 0 && fenced > 0 {
		msg.ToolCalls = []ToolCall{{Name: "", Arguments: "{}", Unreadable: fmt.Sprintf(
			"your reply has %d <tool_call> inside a markdown code block, and calls in code blocks are not run; "+
				"write the call outside any code block", fenced)}}
	}
	return msg
}

// stringArguments is params as a JSON object of strings.
func stringArguments(params []textParam) string {
	args := make(map[string]string, len(params))
	for _, p := range params {
		args[p.name] = p.value
	}
	b, _ := json.Marshal(args)
	return string(b)
}

func specNamed(tools []ToolSpec, name string) (ToolSpec, bool) {
	for _, t := range tools {
		if t.Name == name {
			return t, true
		}
	}
	return ToolSpec{}, false
}

// renderText turns a conversation into the text protocol's form: the
// tools' description appended to the first system message (or a system
// message of its own), calls as the text they were made in (native calls
// of an earlier part of the task written in the grammar), and the tool
// results as user messages, merged with the user messages that follow
// them so that roles still alternate for servers whose chat templates
// insist.
func renderText(msgs []Message, tools []ToolSpec) []Message {
	out := make([]Message, 0, len(msgs)+1)
	described := len(tools) == 0
	mergeable := false // the last message of out is a user message made of tool results
	for _, m := range msgs {
		switch m.Role {
		case RoleSystem:
			if !described {
				m.Content += "\n\n" + toolSection(tools)
				described = true
			}
			mergeable = false
		case RoleAssistant:
			m.Content = assistantText(m)
			m.ToolCalls = nil
			mergeable = false
		case RoleTool, RoleUser:
			text := m.Content
			if m.Role == RoleTool {
				text = resultText(m)
			}
			if mergeable {
				out[len(out)-1].Content += "\n\n" + text
				continue
			}
			if m.Role == RoleTool {
				m = Message{Role: RoleUser, Content: text}
				mergeable = true
			}
		}
		out = append(out, m)
	}
	if !described {
		out = append([]Message{{Role: RoleSystem, Content: toolSection(tools)}}, out...)
	}
	return out
}

// assistantText is an assistant message as the text protocol sends it
// back: its text, which holds its calls, or, for calls made natively (before
// auto fell back), its text followed by the calls in the grammar.
func assistantText(m Message) string {
	if len(m.ToolCalls) == 0 || strings.Contains(m.Content, callOpen) {
		return m.Content
	}
	var b strings.Builder
	b.WriteString(m.Content)
	for _, c := range m.ToolCalls {
		if b.Len() > 0 {
			b.WriteString("\n\n")
		}
		writeCall(&b, c)
	}
	return b.String()
}

// writeCall writes a native call in the grammar: string arguments as
// their text, others as JSON.
func writeCall(b *strings.Builder, c ToolCall) {
	fmt.Fprintf(b, "<tool_call name=%q>\n", c.Name)
	var args map[string]json.RawMessage
	if json.Unmarshal([]byte(orEmptyObject(c.Arguments)), &args) != nil {
		args = map[string]json.RawMessage{"arguments": json.RawMessage(c.Arguments)}
	}
	keys := make([]string, 0, len(args))
	for k := range args {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	for _, k := range keys {
		value := string(args[k])
		var s string
		if json.Unmarshal(args[k], &s) == nil {
			value = s
		}
		writeParam(b, k, value)
	}
	b.WriteString(callClose)
}

// writeParam writes one parameter so that it reads back as value, byte
// for byte: with an end mark when value holds a tag of the grammar, and with a
// leading newline kept by doubling it.
func writeParam(b *strings.Builder, name, value string) {
	fmt.Fprintf(b, "<parameter name=%q", name)
	closer := paramClose
	if strings.Contains(value, paramClose) || markupIn(value) != "" {
		mark := "END"
		for n := 1; strings.Contains(value, mark); n++ {
			mark = fmt.Sprintf("END%d", n)
		}
		fmt.Fprintf(b, " end=%q", mark)
		closer = mark + paramClose
	}
	b.WriteString(">")
	if strings.HasPrefix(value, "\n") {
		b.WriteString("\n")
	}
	b.WriteString(value)
	b.WriteString(closer)
	b.WriteString("\n")
}

// resultText is a tool result as the text protocol sends it.
func resultText(m Message) string {
	return fmt.Sprintf("<tool_result name=%q>\n%s\n</tool_result>", m.Name, m.Content)
}

// FramingBytes implements PromptFramer: the tools' description, and for
// each message what its text form adds (a result's tags, a native call
// written out). A count of the server's covers the text form only once a
// text request was answered: before that (under auto) the whole history
// is bounded as text, so that a fallback within a call stays inside the
// call's reservation.
func (m *textProtocol) FramingBytes(msgs []Message, tools []ToolSpec, counted int) int {
	m.mu.Lock()
	answered := (!m.auto || m.text) && m.answered
	m.mu.Unlock()
	n := 0
	if !answered || counted <= 0 || counted > len(msgs) {
		counted = 0
		if len(tools) > 0 {
			n += jsonLen("\n\n" + toolSection(tools))
		}
	}
	for _, msg := range msgs[counted:] {
		switch {
		case msg.Role == RoleTool:
			n += jsonLen(resultText(msg)) - jsonLen(msg.Content) + jsonLen("\n\n")
		case msg.Role == RoleAssistant && len(msg.ToolCalls) > 0 && !strings.Contains(msg.Content, callOpen):
			n += jsonLen(assistantText(msg))
		}
	}
	return n
}

func jsonLen(s string) int {
	b, _ := json.Marshal(s)
	return len(b)
}
