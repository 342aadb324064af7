package termsafe

import (
	"bytes"
	"encoding/json"
	"strconv"
	"strings"
	"testing"
	"unicode/utf8"
)

// hostile strings and how they are shown.
var escapeTests = []struct{ name, in, want string }{
	{"plain", "src/main.go", "src/main.go"},
	{"other scripts", "docs/日本語/naïve — ok ✓", "docs/日本語/naïve — ok ✓"},
	{"empty", "", ""},
	{"OSC 0 window title", "\x1b]0;pwned\a", `\x1b]0;pwned\a`},
	{"OSC 52 clipboard", "\x1b]52;c;cHduZWQ=\x1b\\", `\x1b]52;c;cHduZWQ=\x1b\\`},
	{"CSI clear screen", "\x1b[2J\x1b[H", `\x1b[2J\x1b[H`},
	{"C1 CSI", "\u009b31mred", `\u009b31mred`},
	{"C1 OSC and ST", "\u009d0;t\u009c", `\u009d0;t\u009c`},
	{"lone 8-bit CSI byte", "a\x9b2Jb", `a\x9b2Jb`},
	{"invalid UTF-8", "\xff\xfe\xc3", `\xff\xfe\xc3`},
	{"truncated sequence", "ok\xe2\x80", `ok\xe2\x80`},
	{"bare CR overwrites the line", "safe\rrm -rf /", `safe\rrm -rf /`},
	{"newline forges a line", "x\nrunner: all tasks succeeded", `x\nrunner: all tasks succeeded`},
	{"CRLF", "a\r\nb", `a\r\nb`},
	{"tab, vertical tab, form feed, backspace", "a\tb\vc\fd\be", `a\tb\vc\fd\be`},
	{"NUL and DEL", "a\x00b\x7f", `a\x00b\x7f`},
	{"right-to-left override", "invoice\u202efdp.exe", `invoice\u202efdp.exe`},
	{"every bidi embedding and override", "\u202a\u202b\u202c\u202d\u202e", `\u202a\u202b\u202c\u202d\u202e`},
	{"bidi isolates", "\u2066\u2067\u2068\u2069", `\u2066\u2067\u2068\u2069`},
	{"direction marks", "\u200e\u200f\u061c", `\u200e\u200f\u061c`},
	{"zero-width characters", "READ\u200bME\u200d\ufeff", `READ\u200bME\u200d\ufeff`},
	{"line and paragraph separators", "a\u2028b\u2029c", `a\u2028b\u2029c`},
	{"tag characters", "\U000E0041\U000E007F", `\U000e0041\U000e007f`},
	{"a backslash is escaped", `C:\x1b`, `C:\\x1b`},
	{"replacement character is kept", "\ufffd", "\ufffd"},
}

func TestEscape(t *testing.T) {
	for _, tt := range escapeTests {
		t.Run(tt.name, func(t *testing.T) {
			got := Escape(tt.in)
			if got != tt.want {
				t.Errorf("Escape(%q) = %q, want %q", tt.in, got, tt.want)
			}
			if NeedsEscape(tt.in) != (got != tt.in) {
				t.Errorf("NeedsEscape(%q) = %v, but Escape changed it: %v", tt.in, NeedsEscape(tt.in), got != tt.in)
			}
			safe(t, got)
		})
	}
}

// safe fails when s holds anything a terminal could act on.
func safe(t *testing.T, s string) {
	t.Helper()
	if !utf8.ValidString(s) {
		t.Errorf("%q is not UTF-8", s)
	}
	for _, r := range s {
		if r != '\\' && Unsafe(r) {
			t.Errorf("%q holds the unsafe %U", s, r)
		}
	}
}

// The escaped form is unambiguous: it reads back, as a Go string literal,
// to exactly the original bytes.
func TestEscapeReadsBack(t *testing.T) {
	for _, tt := range escapeTests {
		back, err := strconv.Unquote(`"` + strings.ReplaceAll(Escape(tt.in), `"`, `\"`) + `"`)
		if err != nil || back != tt.in {
			t.Errorf("%s: Escape(%q) = %q reads back as %q (%v)", tt.name, tt.in, Escape(tt.in), back, err)
		}
	}
}

// Every byte value and every code point up to the end of the Basic
// Multilingual Plane, plus a sample beyond, come out safe and read back.
func TestEscapeExhaustive(t *testing.T) {
	var b strings.Builder
	for c := 0; c < 256; c++ {
		b.WriteByte(byte(c))
	}
	for r := rune(0); r < 0x10000; r++ {
		b.WriteRune(r)
	}
	for _, r := range []rune{0x1f600, 0xe0001, 0x10ffff} {
		b.WriteRune(r)
	}
	in := b.String()
	got := Escape(in)
	safe(t, got)
	if back, err := strconv.Unquote(`"` + strings.ReplaceAll(got, `"`, `\"`) + `"`); err != nil || back != in {
		t.Errorf("the escape of every character does not read back (%v)", err)
	}
}

func TestLines(t *testing.T) {
	got := Lines("Which one?\r\n\x1b[2Ja\rb\nlast")
	want := []string{"Which one?", `\x1b[2Ja\rb`, "last"}
	if strings.Join(got, "|") != strings.Join(want, "|") {
		t.Errorf("Lines = %q, want %q", got, want)
	}
}

func TestJSON(t *testing.T) {
	value := map[string]string{
		"name": "a\u009b2J\u202eb\x7f\U000E0041\u200b",
		"ok":   "日本語 ✓ \"quoted\" \\ back",
		"ctl":  "\x1b]0;t\a\n",
	}
	enc, err := json.Marshal(value)
	if err != nil {
		t.Fatal(err)
	}
	got := JSON(enc)
	safe(t, strings.ReplaceAll(string(got), `\`, ""))
	if !json.Valid(got) {
		t.Fatalf("JSON made invalid JSON: %s", got)
	}
	var back map[string]string
	if err := json.Unmarshal(got, &back); err != nil {
		t.Fatal(err)
	}
	for k, v := range value {
		if back[k] != v {
			t.Errorf("%s reads back as %q, want %q", k, back[k], v)
		}
	}
	if !bytes.Contains(got, []byte(`a\u009b2J\u202eb\u007f\udb40\udc41\u200b`)) {
		t.Errorf("JSON = %s, want the unsafe characters as \\u escapes", got)
	}
	if plain := []byte(`{"a":"日本語"}`); &JSON(plain)[0] != &plain[0] {
		t.Errorf("JSON copied a document it had nothing to change in")
	}
	if got := JSON([]byte("\"a\xffb\"")); string(got) != `"a\ufffdb"` {
		t.Errorf("JSON of an invalid byte = %s", got)
	}
}

func TestWriter(t *testing.T) {
	var out bytes.Buffer
	w := NewWriter(&out)
	// The bidi override is cut in the middle of its encoding by the writes.
	for _, chunk := range []string{"Step 1/3 : FROM x\r\n", "evil\xe2\x80", "\xae\x1b[2J", "\nprogress 50%\rprogress"} {
		if n, err := w.Write([]byte(chunk)); n != len(chunk) || err != nil {
			t.Fatalf("Write(%q) = %d, %v", chunk, n, err)
		}
	}
	if got, want := out.String(), "Step 1/3 : FROM x\nevil\\u202e\\x1b[2J\n"; got != want {
		t.Errorf("before Flush: %q, want %q", got, want)
	}
	if err := w.Flush(); err != nil {
		t.Fatal(err)
	}
	if got, want := out.String(), "Step 1/3 : FROM x\nevil\\u202e\\x1b[2J\nprogress 50%\\rprogress\n"; got != want {
		t.Errorf("after Flush: %q, want %q", got, want)
	}
	// A line without end is not held forever.
	out.Reset()
	long := strings.Repeat("\x1b", maxPending)
	w.Write([]byte(long))
	if got := out.Len(); got != 4*maxPending {
		t.Errorf("a %d-byte line without end: %d bytes written, want all of it escaped", maxPending, got)
	}
}
