// Package termsafe makes untrusted text safe to show on a terminal: the
// one escaping every print of runner goes through, so that a file name,
// a question or an error text written by the agent or a repository can
// neither drive the terminal (set its title, write the clipboard, clear
// the screen), nor display as something it is not, nor forge a line.
//
// A character is escaped when a terminal may act on it or when it is
// invisible or reorders what is around it:
//
//   - C0 controls (ESC, BEL, CR, LF, TAB...), DEL and the C1 controls
//     U+0080–U+009F (U+009B is a one-character CSI);
//   - Unicode format characters (category Cf): the bidi embeddings,
//     overrides and isolates U+202A–U+202E and U+2066–U+2069, the
//     direction marks, zero-width characters, tag characters;
//   - the line and paragraph separators U+2028 and U+2029;
//   - bytes that are not UTF-8 (a lone 0x9B is CSI to an 8-bit terminal);
//   - the backslash itself, so that the escaped form is unambiguous: the
//     text `\x1b` (four characters) is shown as `\\x1b`.
//
// Escapes are written as in Go source: \a \b \t \n \v \f \r, \\, \xNN for
// other C0 controls, DEL and invalid bytes, \uNNNN (or \UNNNNNNNN) for the
// rest. Everything else, letters of any script included, is kept.
package termsafe

import (
	"strings"
	"unicode"
	"unicode/utf8"
)

// Unsafe reports whether r is escaped by Escape.
func Unsafe(r rune) bool {
	switch {
	case r < 0x20, r == 0x7f, r == '\\':
		return true
	case r < 0x80:
		return false
	case r <= 0x9f, r == '\u2028', r == '\u2029':
		return true
	}
	return unicode.Is(unicode.Cf, r)
}

// NeedsEscape reports whether Escape would change s.
func NeedsEscape(s string) bool {
	for i := 0; i < len(s); {
		r, size := utf8.DecodeRuneInString(s[i:])
		if r == utf8.RuneError && size == 1 || Unsafe(r) {
			return true
		}
		i += size
	}
	return false
}

// Escape returns s as one line fit for a terminal: every unsafe character
// (see the package comment), the newline included, replaced by its escape.
func Escape(s string) string {
	if !NeedsEscape(s) {
		return s
	}
	var b strings.Builder
	b.Grow(len(s) + 16)
	for i := 0; i < len(s); {
		r, size := utf8.DecodeRuneInString(s[i:])
		switch {
		case r == utf8.RuneError && size == 1:
			writeHex(&b, 'x', uint32(s[i]), 2)
		case Unsafe(r):
			writeEscape(&b, r)
		default:
			b.WriteString(s[i : i+size])
		}
		i += size
	}
	return b.String()
}

// Lines splits multi-line text at its line ends ("\n", or "\r\n") and
// returns each line escaped by Escape. A caller showing them should mark
// them (an indent, say), so that none passes for a line of its own.
func Lines(s string) []string {
	lines := strings.Split(s, "\n")
	for i, l := range lines {
		lines[i] = Escape(strings.TrimSuffix(l, "\r"))
	}
	return lines
}

func writeEscape(b *strings.Builder, r rune) {
	switch r {
	case '\a':
		b.WriteString(`\a`)
	case '\b':
		b.WriteString(`\b`)
	case '\t':
		b.WriteString(`\t`)
	case '\n':
		b.WriteString(`\n`)
	case '\v':
		b.WriteString(`\v`)
	case '\f':
		b.WriteString(`\f`)
	case '\r':
		b.WriteString(`\r`)
	case '\\':
		b.WriteString(`\\`)
	default:
		switch {
		case r < 0x80:
			writeHex(b, 'x', uint32(r), 2)
		case r <= 0xffff:
			writeHex(b, 'u', uint32(r), 4)
		default:
			writeHex(b, 'U', uint32(r), 8)
		}
	}
}

const hexDigits = "0123456789abcdef"

func writeHex(b *strings.Builder, kind byte, v uint32, digits int) {
	b.WriteByte('\\')
	b.WriteByte(kind)
	for shift := 4 * (digits - 1); shift >= 0; shift -= 4 {
		b.WriteByte(hexDigits[v>>uint(shift)&0xf])
	}
}
