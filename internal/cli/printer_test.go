package cli

import (
	"bytes"
	"io"
	"runtime"
	"strings"
	"testing"
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
			tty, ptmx := openTerminal(t)
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
