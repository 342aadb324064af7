package gitops

import (
	"bytes"
	"strings"
)

// parseAttributes reads the lines of an attributes file as git 2.39 does
// (attr.c): blank and '#' lines are skipped, so are lines of attrMaxLine
// bytes or more, lines with an invalid attribute name, negative patterns
// and, unless macroOK (the root .gitattributes and info/attributes),
// macro definitions. A pattern may be C-quoted. Patterns ending in '/'
// match only directories, never a file, and are dropped.
func parseAttributes(content []byte, origin attrOrigin, macroOK bool) []attrRule {
	if len(content) >= attrMaxFile {
		return nil
	}
	if origin == attrFromBlob {
		if i := bytes.IndexByte(content, 0); i >= 0 {
			content = content[:i]
		}
	}
	var rules []attrRule
	lines := strings.Split(string(content), "\n")
	for n, line := range lines {
		if origin == attrFromFile {
			if n < len(lines)-1 {
				line = strings.TrimSuffix(line, "\r") // strbuf_getline
			}
			if n == 0 {
				line = strings.TrimPrefix(line, "\xef\xbb\xbf")
			}
			if i := strings.IndexByte(line, 0); i >= 0 {
				line = line[:i]
			}
		}
		if r, ok := parseAttrLine(line, macroOK); ok {
			rules = append(rules, r)
		}
	}
	return rules
}

const attrBlank = " \t\r\n"

func parseAttrLine(line string, macroOK bool) (attrRule, bool) {
	cp := strings.TrimLeft(line, attrBlank)
	if cp == "" || cp[0] == '#' || len(line) >= attrMaxLine {
		return attrRule{}, false
	}
	var name, states string
	if unq, rest, ok := unquoteC(cp); ok {
		name, states = unq, rest
	} else {
		i := blankIndex(cp)
		name, states = cp[:i], cp[i:]
	}
	var r attrRule
	if len(name) > len("[attr]") && strings.HasPrefix(name, "[attr]") {
		if !macroOK {
			return attrRule{}, false
		}
		m := strings.TrimLeft(name[len("[attr]"):], attrBlank)
		m = m[:blankIndex(m)]
		if !validAttrName(m) {
			return attrRule{}, false
		}
		r.macro = m
	} else {
		if i := strings.IndexByte(name, 0); i >= 0 {
			name = name[:i] // a C string in git
		}
		if strings.HasPrefix(name, "!") {
			return attrRule{}, false // negative patterns are ignored
		}
		if strings.HasSuffix(name, "/") {
			return attrRule{}, false // directories only: never a file
		}
		r.basename = !strings.Contains(name, "/")
		r.pattern = strings.TrimPrefix(name, "/")
		// git's own shortcuts (match_basename, match_pathname).
		r.literal = !strings.ContainsAny(r.pattern, `*?[\`)
		r.suffix = r.basename && strings.HasPrefix(r.pattern, "*") && !strings.ContainsAny(r.pattern[1:], `*?[\`)
	}
	for states = strings.TrimLeft(states, attrBlank); states != ""; {
		i := blankIndex(states)
		tok := states[:i]
		states = strings.TrimLeft(states[i:], attrBlank)
		// As git's parse_attr: the name ends at '='; a leading '-' or '!'
		// wins over a value ("-text=x" unsets text).
		a := attrAssign{name: tok, val: attrValue{state: attrSet}}
		if name, value, ok := strings.Cut(tok, "="); ok {
			a.name, a.val = name, attrValue{state: attrString, value: value}
		}
		switch tok[0] {
		case '-':
			a.name, a.val = a.name[1:], attrValue{state: attrUnset}
		case '!':
			a.name, a.val = a.name[1:], attrValue{state: attrUnspecified}
		}
		if !validAttrName(a.name) {
			return attrRule{}, false
		}
		r.assigns = append(r.assigns, a)
	}
	return r, true
}

func blankIndex(s string) int {
	if i := strings.IndexAny(s, attrBlank); i >= 0 {
		return i
	}
	return len(s)
}

// validAttrName is git's attr_name_valid: [-A-Za-z0-9_.]+, not starting
// with '-'.
func validAttrName(s string) bool {
	if s == "" || s[0] == '-' {
		return false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		if !(c == '-' || c == '.' || c == '_' || '0' <= c && c <= '9' || 'a' <= c && c <= 'z' || 'A' <= c && c <= 'Z') {
			return false
		}
	}
	return true
}

// unquoteC is git's unquote_c_style: a string in double quotes with the
// escapes \a \b \f \n \r \t \v \\ \" and three octal digits. It returns
// the string and what follows the closing quote.
func unquoteC(s string) (unquoted, rest string, ok bool) {
	if !strings.HasPrefix(s, `"`) {
		return "", "", false
	}
	var b strings.Builder
	for i := 1; i < len(s); i++ {
		c := s[i]
		switch c {
		case '"':
			return b.String(), s[i+1:], true
		case '\\':
		default:
			b.WriteByte(c)
			continue
		}
		if i++; i >= len(s) {
			return "", "", false
		}
		switch c = s[i]; c {
		case 'a':
			c = '\a'
		case 'b':
			c = '\b'
		case 'f':
			c = '\f'
		case 'n':
			c = '\n'
		case 'r':
			c = '\r'
		case 't':
			c = '\t'
		case 'v':
			c = '\v'
		case '\\', '"':
		case '0', '1', '2', '3':
			if i+2 >= len(s) || !isOctal(s[i+1]) || !isOctal(s[i+2]) {
				return "", "", false
			}
			c = (c-'0')<<6 | (s[i+1]-'0')<<3 | (s[i+2] - '0')
			i += 2
		default:
			return "", "", false
		}
		b.WriteByte(c)
	}
	return "", "", false
}

func isOctal(c byte) bool { return '0' <= c && c <= '7' }
