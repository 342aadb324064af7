package cli

import (
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"log/slog"
	"runtime"
	"strconv"
	"strings"
	"testing"

	"github.com/runner-dev/runner/internal/ptytest"
)

func env(vars map[string]string) func(string) string {
	return func(k string) string { return vars[k] }
}

func TestPrinterPlainWhenNotTerminal(t *testing.T) {
	var out, errw bytes.Buffer
	p := NewPrinter(&out, &errw, PrinterOptions{Getenv: env(nil)})
	if p.Terminal() || p.Color() {
		t.Fatalf("Terminal()=%v Color()=%v for a buffer, want false", p.Terminal(), p.Color())
	}
	p.Success("built %s", "x")
	p.Heading("list")
	p.Line("a %d", 1)
	p.Printf("raw")
	p.Warn("careful %s", "now")
	p.Problem("bad %s", "thing")
	if got, want := out.String(), "built x\nlist\na 1\nraw"; got != want {
		t.Errorf("out = %q, want %q", got, want)
	}
	if got, want := errw.String(), "warning: careful now\nbad thing\n"; got != want {
		t.Errorf("err = %q, want %q", got, want)
	}
}

func TestPrinterColourOnTerminal(t *testing.T) {
	if runtime.GOOS != "linux" {
		t.Skip("pseudo-terminals are opened the Linux way")
	}
	tests := []struct {
		name      string
		noColor   bool
		env       map[string]string
		wantColor bool
	}{
		{"terminal", false, nil, true},
		{"NO_COLOR set", false, map[string]string{"NO_COLOR": "1"}, false},
		{"--no-color", true, nil, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			tty, ptmx := ptytest.Open(t)
			p := NewPrinter(tty, io.Discard, PrinterOptions{NoColor: tt.noColor, Getenv: env(tt.env)})
			if !p.Terminal() {
				t.Fatal("Terminal() = false on a pseudo-terminal")
			}
			if p.Color() != tt.wantColor {
				t.Fatalf("Color() = %v, want %v", p.Color(), tt.wantColor)
			}
			p.Success("done")
			buf := make([]byte, 256)
			n, err := ptmx.Read(buf)
			if err != nil {
				t.Fatal(err)
			}
			got := string(buf[:n])
			if colored := strings.Contains(got, "\x1b[32m"); colored != tt.wantColor {
				t.Errorf("terminal received %q; colour %v, want %v", got, colored, tt.wantColor)
			}
			if !strings.Contains(got, "done") {
				t.Errorf("terminal received %q, want the message", got)
			}
		})
	}
}

func TestPrinterJSON(t *testing.T) {
	var out bytes.Buffer
	p := NewPrinter(&out, io.Discard, PrinterOptions{})
	if err := p.JSON(map[string]any{"cmd": "a && b", "n": 2}); err != nil {
		t.Fatal(err)
	}
	if got, want := out.String(), "{\n  \"cmd\": \"a && b\",\n  \"n\": 2\n}\n"; got != want {
		t.Errorf("JSON wrote %q, want %q", got, want)
	}
	if err := p.JSON(func() {}); err == nil {
		t.Error("JSON of a func: no error")
	}
}

// hostile is text from the agent or a repository that a terminal would
// obey: window title, clipboard write, clear screen, a C1 CSI, a bidi
// override, a bare CR, a forged line, a byte that is not UTF-8.
const hostile = "a\x1b]0;t\a\x1b]52;c;eA==\a\x1b[2J\u009b1m\u202eb\rc\nrunner: ok\xff"

const hostileEscaped = `a\x1b]0;t\a\x1b]52;c;eA==\a\x1b[2J\u009b1m\u202eb\rc\nrunner: ok\xff`

// noControls fails when s holds a character a terminal could act on,
// other than the line ends between lines.
func noControls(t *testing.T, where, s string) {
	t.Helper()
	for _, c := range []string{"\x1b", "\a", "\r", "\u009b", "\u202e", "\xff"} {
		if strings.Contains(s, c) {
			t.Errorf("%s holds %q raw: %q", where, c, s)
		}
	}
}

type stringer struct{}

func (stringer) String() string { return hostile }

// Every argument of every print is escaped, whatever its type and verb;
// the format, runner's own, is not.
func TestPrinterEscapesArguments(t *testing.T) {
	var out, errw bytes.Buffer
	p := NewPrinter(&out, &errw, PrinterOptions{})
	p.Line("line %s %v %d", hostile, errors.New(hostile), 42)
	p.Printf("printf %s|", stringer{})
	p.Success("done %s", hostile)
	p.Heading("%-12s|%q", "ID\x1b", hostile)
	p.Warn("warn %v", []string{hostile})
	p.Problem("problem %s", []byte(hostile))
	p.Note("note %s", hostile)
	p.Prompt("prompt %s: ", hostile)
	noControls(t, "out", out.String())
	noControls(t, "errw", errw.String())
	wantOut := "line " + hostileEscaped + " " + hostileEscaped + " 42\n" +
		"printf " + hostileEscaped + "|done " + hostileEscaped + "\n" +
		`ID\x1b      |"` + hostileEscaped + "\"\n"
	if got := out.String(); got != wantOut {
		t.Errorf("out =\n%q\nwant\n%q", got, wantOut)
	}
	wantErr := "warning: warn [" + hostileEscaped + "]\n" +
		"problem " + hostileEscaped + "\n" +
		"note " + hostileEscaped + "\n" +
		"prompt " + hostileEscaped + ": "
	if got := errw.String(); got != wantErr {
		t.Errorf("errw =\n%q\nwant\n%q", got, wantErr)
	}
	// %q writes a Go string literal of the value.
	var q bytes.Buffer
	NewPrinter(&q, io.Discard, PrinterOptions{}).Printf("%q", `say "hi" `+hostile)
	if back, err := strconv.Unquote(q.String()); err != nil || back != `say "hi" `+hostile {
		t.Errorf("%%q wrote %s, which reads back as %q (%v)", q.String(), back, err)
	}
}

// Multi-line text keeps its lines, each escaped and indented.
func TestPrinterExcerpt(t *testing.T) {
	var errw bytes.Buffer
	NewPrinter(io.Discard, &errw, PrinterOptions{}).Excerpt("  ", "Which one?\r\n"+hostile)
	want := "  Which one?\n  " + `a\x1b]0;t\a\x1b]52;c;eA==\a\x1b[2J\u009b1m\u202eb\rc` + "\n  runner: ok\\xff\n"
	if got := errw.String(); got != want {
		t.Errorf("Excerpt wrote %q, want %q", got, want)
	}
}

// --json output is valid JSON that reads back to the exact values, with
// nothing a terminal could act on left raw.
func TestPrinterJSONHostile(t *testing.T) {
	var out bytes.Buffer
	p := NewPrinter(&out, io.Discard, PrinterOptions{})
	v := map[string]string{"path": hostile + "\u2066\u200f\x7f", "ok": "naïve ✓ <b>"}
	if err := p.JSON(v); err != nil {
		t.Fatal(err)
	}
	noControls(t, "JSON", strings.ReplaceAll(out.String(), "\n", ""))
	for _, c := range []string{"\u2066", "\u200f", "\x7f"} {
		if strings.Contains(out.String(), c) {
			t.Errorf("JSON holds %q raw: %s", c, out.String())
		}
	}
	var back map[string]string
	if err := json.Unmarshal(out.Bytes(), &back); err != nil {
		t.Fatalf("not JSON: %v\n%s", err, out.String())
	}
	if back["ok"] != v["ok"] || back["path"] != strings.ToValidUTF8(v["path"], "\ufffd") {
		t.Errorf("JSON reads back as %q, want %q", back, v)
	}
}

// Logs escape the message, the keys and every text value.
func TestLogHandlerEscapes(t *testing.T) {
	var buf bytes.Buffer
	log := slog.New(NewLogHandler(&buf, slog.LevelDebug))
	log.Debug("msg "+hostile, "path", hostile, "err", errors.New(hostile), "k\x1b", 1, "bytes", []byte(hostile),
		slog.Group("g", "inner", hostile))
	got := buf.String()
	if strings.Count(got, "\n") != 1 || !strings.HasSuffix(got, "\n") {
		t.Errorf("the log is not one line: %q", got)
	}
	noControls(t, "log", got)
	for _, want := range []string{`path="a\\x1b]0;t\\a`, `k\x1b=1`, `g.inner="a\\x1b`, `err="a\\x1b`, `msg="msg a\\x1b`} {
		if !strings.Contains(got, want) {
			t.Errorf("log %q lacks %q", got, want)
		}
	}
}
