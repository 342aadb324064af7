// Package cli holds what every runner command shares: the printer for
// user-facing output and the mapping of errors to exit codes and hints.
package cli

import (
	"encoding/json"
	"fmt"
	"io"

	"golang.org/x/term"
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

// Out is the writer of results, for output the printer does not shape.
func (p *Printer) Out() io.Writer { return p.out }

// Err is the writer of diagnostics (warnings, progress, errors).
func (p *Printer) Err() io.Writer { return p.errw }

// Printf writes formatted text to the output as is.
func (p *Printer) Printf(format string, a ...any) {
	fmt.Fprintf(p.out, format, a...)
}

// Line writes one line of output.
func (p *Printer) Line(format string, a ...any) {
	fmt.Fprintf(p.out, format+"\n", a...)
}

// Success writes one line reporting something done; on a colour terminal it
// is marked with a green check.
func (p *Printer) Success(format string, a ...any) {
	msg := fmt.Sprintf(format, a...)
	if p.outColor {
		msg = green + "✓" + reset + " " + msg
	}
	fmt.Fprintln(p.out, msg)
}

// Heading writes a line that introduces a list; bold on a colour terminal.
func (p *Printer) Heading(format string, a ...any) {
	msg := fmt.Sprintf(format, a...)
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
	fmt.Fprintln(p.errw, label+" "+fmt.Sprintf(format, a...))
}

// Problem writes one line describing a failure to the diagnostics writer,
// red on a colour terminal.
func (p *Printer) Problem(format string, a ...any) {
	msg := fmt.Sprintf(format, a...)
	if p.errColor {
		msg = red + msg + reset
	}
	fmt.Fprintln(p.errw, msg)
}

// JSON writes v as indented JSON followed by a newline: the machine output
// of --json.
func (p *Printer) JSON(v any) error {
	enc := json.NewEncoder(p.out)
	enc.SetIndent("", "  ")
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		return fmt.Errorf("write JSON: %w", err)
	}
	return nil
}
