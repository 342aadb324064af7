package cli

import (
	"fmt"
	"io"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/runner-dev/runner/internal/termsafe"
)

// escaped wraps the arguments of a print so that each is written escaped.
func escaped(args []any) []any {
	out := make([]any, len(args))
	for i, a := range args {
		out[i] = untrusted{a}
	}
	return out
}

// untrusted is an argument of a print: fmt formats it as it would the
// value, and what comes out is escaped by termsafe.Escape, then padded to
// the directive's width, so that columns line up as shown. With %q it is
// the escaped text in double quotes, a valid Go string literal of the
// value, as %q would write it.
type untrusted struct{ v any }

// Format implements fmt.Formatter.
func (u untrusted) Format(f fmt.State, verb rune) {
	var s string
	if t, ok := text(u.v); ok && verb == 'q' {
		s = `"` + strings.ReplaceAll(termsafe.Escape(t), `"`, `\"`) + `"`
	} else {
		s = termsafe.Escape(fmt.Sprintf(unpadded(f, verb), u.v))
	}
	if w, ok := f.Width(); ok {
		if pad := w - utf8.RuneCountInString(s); pad > 0 {
			if f.Flag('-') {
				s += strings.Repeat(" ", pad)
			} else {
				s = strings.Repeat(" ", pad) + s
			}
		}
	}
	io.WriteString(f, s)
}

// unpadded is the directive f stands for, without its width.
func unpadded(f fmt.State, verb rune) string {
	d := "%"
	for _, flag := range "+# " {
		if f.Flag(int(flag)) {
			d += string(flag)
		}
	}
	if p, ok := f.Precision(); ok {
		d += "." + strconv.Itoa(p)
	}
	return d + string(verb)
}

// text is the text of a value %s would print, for the kinds %q quotes.
func text(v any) (string, bool) {
	switch v := v.(type) {
	case string:
		return v, true
	case []byte:
		return string(v), true
	case error:
		return v.Error(), true
	case fmt.Stringer:
		return v.String(), true
	}
	return "", false
}
