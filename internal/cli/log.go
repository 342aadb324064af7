package cli

import (
	"encoding"
	"fmt"
	"io"
	"log/slog"

	"github.com/runner-dev/runner/internal/termsafe"
)

// NewLogHandler returns the handler of runner's logs: slog's text format
// on w, from level up, with the message, every key and every value that is
// text (strings, errors, anything printed with %+v) escaped by
// termsafe.Escape, as the printer escapes what it prints. The text handler
// then quotes a value holding a space or a quote, as it always does.
func NewLogHandler(w io.Writer, level slog.Leveler) slog.Handler {
	return slog.NewTextHandler(w, &slog.HandlerOptions{Level: level, ReplaceAttr: escapeAttr})
}

func escapeAttr(_ []string, a slog.Attr) slog.Attr {
	a.Key = termsafe.Escape(a.Key)
	switch v := a.Value; v.Kind() {
	case slog.KindString:
		a.Value = slog.StringValue(termsafe.Escape(v.String()))
	case slog.KindAny:
		var s string
		switch x := v.Any().(type) {
		case encoding.TextMarshaler:
			b, err := x.MarshalText()
			if err != nil {
				s = "!ERROR:" + err.Error()
			} else {
				s = string(b)
			}
		case []byte:
			s = string(x)
		default:
			s = fmt.Sprintf("%+v", x)
		}
		a.Value = slog.StringValue(termsafe.Escape(s))
	}
	return a
}
