package agent

import (
	"fmt"
	"strings"
)

// The text tool protocol's grammar. Outside fenced code blocks, every
// occurrence of "<tool_call" in the assistant's text starts a call, which
// must read:
//
//	call   = "<tool_call" WS "name=" QUOTED WS? ">" WS? { param WS? } "</tool_call>"
//	param  = "<parameter" WS "name=" QUOTED [ WS "end=" QUOTED ] WS? ">" VALUE CLOSE
//	CLOSE  = "</parameter>" without end, MARK "</parameter>" with end="MARK"
//	QUOTED = '"' NAME '"'   NAME = 1 to 64 of [A-Za-z0-9_.-]   MARK = 1 to 64 of [A-Za-z0-9_]
//	WS     = spaces, tabs, carriage returns and newlines
//
// A value is the text after the parameter's ">" up to the first CLOSE,
// byte for byte, except that one newline right after the ">" is dropped
// (so a value may start on its own line). A value without end may not
// contain "<tool_call", "</tool_call>" or "<parameter": those show a
// parameter left unclosed, which would otherwise swallow the next call. A
// value that contains any of them, or "</parameter>", must use end="MARK"
// with a MARK that does not occur in it: the value then runs to the first
// MARK immediately followed by "</parameter>", and nothing in it is
// special. "<" and "&" are always plain text: there are no entities.
//
// Calls are run in the order they appear, as native parallel calls are.
// A fenced code block is a line starting (after up to three spaces) with
// three or more backticks or tildes, up to a line with at least as many of
// the same character and nothing else; calls inside one are examples and
// never run, and a reply whose only calls are inside code blocks is told
// so. Inline code (`...`) is not exempt. Text between calls is kept as
// the assistant's words and not interpreted.
//
// The first call that breaks the grammar ends the reading of the reply:
// it and everything after it are not run, because where it ends is not
// known; the calls before it run.

const (
	callOpen    = "<tool_call"
	callClose   = "</tool_call>"
	paramOpen   = "<parameter"
	paramClose  = "</parameter>"
	maxNameLen  = 64
	maxParams   = 64
	maxMarkLen  = 64
	fenceMinLen = 3
)

// textCall is one call read from the text: its tool name and its
// parameters as written, in order, or the reason it does not parse.
type textCall struct {
	name   string
	params []textParam
	line   int    // of the "<tool_call"
	err    string // set when the call breaks the grammar
}

type textParam struct{ name, value string }

// parseTextCalls reads the calls of an assistant's text. fenced counts the
// "<tool_call"s seen inside fenced code blocks (not run). It runs in time
// linear in the length of text.
func parseTextCalls(text string) (calls []textCall, fenced int) {
	var fence string // the opening fence's run of ` or ~, while inside one
	line, atStart, eol := 1, true, 0
	for pos := 0; pos < len(text); {
		if pos >= eol { // the end of the line is searched for once per line
			eol = len(text)
			if e := strings.IndexByte(text[pos:], '\n'); e >= 0 {
				eol = pos + e + 1
			}
		}
		l := text[pos:eol]
		if f := fenceAt(l, atStart); f != "" {
			switch {
			case fence == "":
				fence = f
			case f[0] == fence[0] && len(f) >= len(fence) && strings.Trim(l, f[:1]+" \t\r\n") == "":
				fence = ""
			}
			pos, line = eol, line+1
			continue
		}
		i := strings.Index(l, callOpen)
		if fence != "" || i < 0 {
			if fence != "" {
				fenced += strings.Count(l, callOpen)
			}
			pos, line, atStart = eol, line+1, true
			continue
		}
		c, next := parseOneCall(text, pos+i, line)
		calls = append(calls, c)
		if c.err != "" {
			return calls, fenced
		}
		line += strings.Count(text[pos+i:next], "\n")
		pos, atStart = next, text[next-1] == '\n'
	}
	return calls, fenced
}

// fenceAt returns the run of backticks or tildes that opens line as a
// code fence, or "" (always for the rest of a line after a call).
func fenceAt(line string, atStart bool) string {
	if !atStart {
		return ""
	}
	l := strings.TrimRight(line, "\r\n")
	indent := len(l) - len(strings.TrimLeft(l, " "))
	if indent > 3 {
		return ""
	}
	l = l[indent:]
	if l == "" || (l[0] != '`' && l[0] != '~') {
		return ""
	}
	n := len(l) - len(strings.TrimLeft(l, l[:1]))
	if n < fenceMinLen {
		return ""
	}
	if l[0] == '`' && strings.Contains(l[n:], "`") {
		return "" // an info string with a backtick: not a fence (CommonMark)
	}
	return l[:n]
}

// parseOneCall reads the call starting at text[start] ("<tool_call") and
// returns it with the offset just past its "</tool_call>". A call that
// breaks the grammar comes back with err set and next undefined.
func parseOneCall(text string, start, line int) (c textCall, next int) {
	c.line = line
	p := &cursor{s: text, i: start + len(callOpen)}
	fail := func(format string, args ...any) (textCall, int) {
		c.err = fmt.Sprintf("the <tool_call> at line %d does not follow the grammar: ", line) + fmt.Sprintf(format, args...)
		return c, len(text)
	}
	attrs, ok, why := p.attributes("tool_call")
	if !ok {
		return fail("%s", why)
	}
	name, has := attrs["name"]
	if !has || len(attrs) != 1 {
		return fail(`its opening tag must be exactly <tool_call name="TOOL">`)
	}
	c.name = name
	seen := map[string]bool{}
	for {
		p.space()
		switch {
		case strings.HasPrefix(p.s[p.i:], callClose):
			return c, p.i + len(callClose)
		case strings.HasPrefix(p.s[p.i:], paramOpen):
			if len(c.params) == maxParams {
				return fail("more than %d parameters", maxParams)
			}
			p.i += len(paramOpen)
			pattrs, ok, why := p.attributes("parameter")
			if !ok {
				return fail("%s", why)
			}
			pname, has := pattrs["name"]
			mark, hasEnd := pattrs["end"]
			if !has || len(pattrs) != 1+btoi(hasEnd) {
				return fail(`a parameter's opening tag must be <parameter name="NAME"> or <parameter name="NAME" end="MARK">`)
			}
			if hasEnd && !isMark(mark) {
				return fail(`parameter %q: end="%s" is not 1 to %d letters, digits and underscores`, pname, mark, maxMarkLen)
			}
			if seen[pname] {
				return fail("parameter %q is given twice", pname)
			}
			seen[pname] = true
			closer := paramClose
			if hasEnd {
				closer = mark + paramClose
			}
			v := p.s[p.i:]
			n := strings.Index(v, closer)
			if n < 0 {
				return fail("parameter %q is not closed with %s (the reply ended first)", pname, closer)
			}
			value := v[:n]
			if tag := markupIn(value); !hasEnd && tag != "" {
				return fail("the value of parameter %q contains %s: close the parameter with </parameter> first, or, "+
					"if the value is meant to hold it, write the parameter with end=\"MARK\"", pname, tag)
			}
			value = strings.TrimPrefix(value, "\n")
			c.params = append(c.params, textParam{name: pname, value: value})
			p.i += n + len(closer)
		case p.i >= len(p.s):
			return fail("it is not closed with </tool_call> (the reply ended first)")
		default:
			return fail("expected <parameter ...> or </tool_call>, found %q", snippet(p.s[p.i:]))
		}
	}
}

// markupIn returns the first tag of the grammar that a value without an
// end mark may not hold, or "".
func markupIn(value string) string {
	for _, tag := range []string{callOpen, callClose, paramOpen} {
		if strings.Contains(value, tag) {
			return tag
		}
	}
	return ""
}

// cursor reads a tag's attributes.
type cursor struct {
	s string
	i int
}

func (p *cursor) space() {
	for p.i < len(p.s) && isSpace(p.s[p.i]) {
		p.i++
	}
}

// attributes reads ` key="value" ...>` after a tag's name, up to and
// including the ">". Values are names (see isName or isMark).
func (p *cursor) attributes(tag string) (map[string]string, bool, string) {
	attrs := map[string]string{}
	for {
		before := p.i
		p.space()
		if p.i < len(p.s) && p.s[p.i] == '>' {
			p.i++
			return attrs, true, ""
		}
		if p.i == before {
			return nil, false, fmt.Sprintf("<%s must be followed by a space and its attributes, found %q", tag, snippet(p.s[p.i:]))
		}
		k := p.i
		for p.i < len(p.s) && p.s[p.i] >= 'a' && p.s[p.i] <= 'z' {
			p.i++
		}
		key := p.s[k:p.i]
		if key == "" || !strings.HasPrefix(p.s[p.i:], `="`) {
			return nil, false, fmt.Sprintf(`<%s: expected name="..." found %q`, tag, snippet(p.s[k:]))
		}
		p.i += 2
		v := p.i
		for p.i < len(p.s) && p.i-v <= maxNameLen && isNameByte(p.s[p.i]) {
			p.i++
		}
		if p.i >= len(p.s) || p.s[p.i] != '"' || p.i == v || p.i-v > maxNameLen {
			return nil, false, fmt.Sprintf(`<%s: the value of %s must be 1 to %d of A-Z a-z 0-9 _ . - in double quotes, found %q`,
				tag, key, maxNameLen, snippet(p.s[k:]))
		}
		if _, dup := attrs[key]; dup {
			return nil, false, fmt.Sprintf("<%s: attribute %s is given twice", tag, key)
		}
		attrs[key] = p.s[v:p.i]
		p.i++
	}
}

func isSpace(b byte) bool { return b == ' ' || b == '\t' || b == '\r' || b == '\n' }

func isNameByte(b byte) bool {
	return b >= 'a' && b <= 'z' || b >= 'A' && b <= 'Z' || b >= '0' && b <= '9' || b == '_' || b == '.' || b == '-'
}

func isMark(s string) bool {
	if s == "" || len(s) > maxMarkLen {
		return false
	}
	for i := 0; i < len(s); i++ {
		if !isNameByte(s[i]) || s[i] == '.' || s[i] == '-' {
			return false
		}
	}
	return true
}

func btoi(b bool) int {
	if b {
		return 1
	}
	return 0
}

// snippet quotes the start of s for an error message.
func snippet(s string) string {
	const limit = 40
	if len(s) > limit {
		return strings.ToValidUTF8(s[:limit], "") + "…"
	}
	return s
}
