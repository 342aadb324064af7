// Package cli holds what every runner command shares: the printer for
// user-facing output and the mapping of errors to exit codes and hints.
package cli

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"

	"golang.org/x/term"

	"github.com/runner-dev/runner/internal/termsafe"
)

// ANSI colours used on a terminal.
const (
	green  = "\x1b[32m"
	yellow = "\x1b[33m"
	red    = "\x1b[31m"
	bold   = "\x1b[1m"
	reset  = "\x1b[0m"
)

// Printer writes what people (or, in JSON mode, programs) read: results to
// out, warnings to errw. It knows whether out is a terminal; when it is not,
// every line is plain text with no colour and no decoration, fit for a pipe
// or a log file. Colour is used only on a terminal, and never when NO_COLOR
// is set or --no-color was given.
//
// The format strings are runner's own; every argument is untrusted and is
// printed escaped by termsafe.Escape (control characters, bidi overrides,
// line breaks...), whatever the verb, so that nothing the agent or a
// repository wrote can drive the terminal or forge a line. Multi-line
// untrusted text goes through Excerpt; JSON is valid JSON with the same
// escaping applied inside its strings.
type Printer struct {
	out, errw          io.Writer
	outTTY, errTTY     bool
	outColor, errColor bool
}

// PrinterOptions say how a Printer decides on colour.
type PrinterOptions struct {
	// NoColor is the --no-color flag.
	NoColor bool
	// Getenv reads the environment (NO_COLOR); nil means no variable is set.
	Getenv func(string) string
}

// NewPrinter returns a printer writing to out and errw. A writer is a
// terminal when it is an *os.File (or anything with Fd) open on a terminal.
func NewPrinter(out, errw io.Writer, opt PrinterOptions) *Printer {
	noColor := opt.NoColor
	if opt.Getenv != nil && opt.Getenv("NO_COLOR") != "" {
		noColor = true
	}
	p := &Printer{out: out, errw: errw, outTTY: IsTerminal(out), errTTY: IsTerminal(errw)}
	p.outColor = p.outTTY && !noColor
	p.errColor = p.errTTY && !noColor
	return p
}

// IsTerminal reports whether w is open on a terminal.
func IsTerminal(w io.Writer) bool {
	f, ok := w.(interface{ Fd() uintptr })
	return ok && term.IsTerminal(int(f.Fd()))
}

// Terminal reports whether the output goes to a terminal.
func (p *Printer) Terminal() bool { return p.outTTY }

// Color reports whether the output is coloured.
func (p *Printer) Color() bool { return p.outColor }

// Stream returns a writer that passes a stream of untrusted lines (a
// build's output) to the diagnostics writer, each line escaped; the caller
// flushes it at the end.
func (p *Printer) Stream() *termsafe.Writer { return termsafe.NewWriter(p.errw) }

// Printf writes formatted text to the output, its arguments escaped.
func (p *Printer) Printf(format string, a ...any) {
	fmt.Fprintf(p.out, format, escaped(a)...)
}

// Line writes one line of output.
func (p *Printer) Line(format string, a ...any) {
	fmt.Fprintf(p.out, format+"\n", escaped(a)...)
}

// Note writes one line to the diagnostics writer, undecorated: progress.
func (p *Printer) Note(format string, a ...any) {
	fmt.Fprintf(p.errw, format+"\n", escaped(a)...)
}

// Excerpt writes untrusted multi-line text (an agent's question) to the
// diagnostics writer, one line of it a line, each escaped and preceded by
// indent, so that none of its lines can pass for one of runner's.
func (p *Printer) Excerpt(indent, text string) {
	var b bytes.Buffer
	for _, line := range termsafe.Lines(text) {
		b.WriteString(indent + line + "\n")
	}
	p.errw.Write(b.Bytes())
}

// Prompt writes a prompt, without a line end, to the diagnostics writer.
func (p *Printer) Prompt(format string, a ...any) {
	fmt.Fprintf(p.errw, format, escaped(a)...)
}

// Success writes one line reporting something done; on a colour terminal it
// is marked with a green check.
func (p *Printer) Success(format string, a ...any) {
	msg := fmt.Sprintf(format, escaped(a)...)
	if p.outColor {
		msg = green + "✓" + reset + " " + msg
	}
	fmt.Fprintln(p.out, msg)
}

// Heading writes a line that introduces a list; bold on a colour terminal.
func (p *Printer) Heading(format string, a ...any) {
	msg := fmt.Sprintf(format, escaped(a)...)
	if p.outColor {
		msg = bold + msg + reset
	}
	fmt.Fprintln(p.out, msg)
}

// Warn writes "warning: msg" to the diagnostics writer.
func (p *Printer) Warn(format string, a ...any) {
	label := "warning:"
	if p.errColor {
		label = yellow + label + reset
	}
	fmt.Fprintln(p.errw, label+" "+fmt.Sprintf(format, escaped(a)...))
}

// Problem writes one line describing a failure to the diagnostics writer,
// red on a colour terminal.
func (p *Printer) Problem(format string, a ...any) {
	msg := fmt.Sprintf(format, escaped(a)...)
	if p.errColor {
		msg = red + msg + reset
	}
	fmt.Fprintln(p.errw, msg)
}

// JSON writes v as indented JSON followed by a newline: the machine output
// of --json. Strings keep their exact value for a JSON reader; what a
// terminal could act on in them is written as a \u escape (termsafe.JSON).
func (p *Printer) JSON(v any) error {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetIndent("", "  ")
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		return fmt.Errorf("write JSON: %w", err)
	}
	if _, err := p.out.Write(termsafe.JSON(buf.Bytes())); err != nil {
		return fmt.Errorf("write JSON: %w", err)
	}
	return nil
}
