package cli

import (
	"errors"
	"slices"
	"strings"

	"github.com/runner-dev/runner/internal/termsafe"
)

// lineError is an error whose message is a list, one item a line (a task
// file's problems, the problems found before a run): ErrorLines returns
// those lines, and Error returns them joined by "\n".
type lineError interface {
	error
	ErrorLines() []string
}

// ErrorLines returns err's message as it is shown on a terminal: one line,
// escaped by termsafe.Escape, a line break in it included, so that no
// text inside an error can forge a line. An error that is a list (it, or
// an error it wraps, has an ErrorLines method) keeps its own line breaks:
// each of its lines is escaped on its own, with the text the wrapping
// errors put around it on the first and the last.
func ErrorLines(err error) []string {
	full := err.Error()
	var list lineError
	if errors.As(err, &list) {
		items := list.ErrorLines()
		inner := list.Error()
		if i := strings.Index(full, inner); i >= 0 && len(items) > 0 && inner == strings.Join(items, "\n") {
			lines := slices.Clone(items)
			lines[0] = full[:i] + lines[0]
			lines[len(lines)-1] += full[i+len(inner):]
			lines[0] = strings.TrimLeft(lines[0], " \t\r\n")
			lines[len(lines)-1] = strings.TrimRight(lines[len(lines)-1], " \t\r\n")
			for k, l := range lines {
				lines[k] = termsafe.Escape(l)
			}
			return lines
		}
	}
	return []string{termsafe.Escape(strings.TrimSpace(full))}
}
