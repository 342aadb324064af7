package agent

import (
	"encoding/json"
	"strings"
	"testing"
)

// render writes calls in the grammar, as writeCall does for native ones.
func renderCall(name string, params ...textParam) string {
	var b strings.Builder
	b.WriteString(`<tool_call name="` + name + "\">\n")
	for _, p := range params {
		writeParam(&b, p.name, p.value)
	}
	b.WriteString(callClose)
	return b.String()
}

func TestParseTextCalls(t *testing.T) {
	fence := "```"
	tests := []struct {
		name   string
		text   string
		want   []textCall // name, params; err as a substring
		fenced int
	}{
		{name: "none", text: "I am done.\nNo calls here."},
		{name: "one call", text: "Let me look.\n<tool_call name=\"read_file\">\n<parameter name=\"path\">a.go</parameter>\n</tool_call>\n",
			want: []textCall{{name: "read_file", params: []textParam{{"path", "a.go"}}}}},
		{name: "value on its own line keeps its last newline",
			text: "<tool_call name=\"write_file\"><parameter name=\"path\">x</parameter><parameter name=\"content\">\nline\n</parameter></tool_call>",
			want: []textCall{{name: "write_file", params: []textParam{{"path", "x"}, {"content", "line\n"}}}}},
		{name: "two calls run in order, text between kept",
			text: "<tool_call name=\"a\"></tool_call> and then <tool_call name=\"b\">\n</tool_call>",
			want: []textCall{{name: "a"}, {name: "b"}}},
		{name: "a call in a code block is not read",
			text: "Example:\n" + fence + "xml\n<tool_call name=\"a\"></tool_call>\n" + fence + "\n", fenced: 1},
		{name: "a call after a closed code block is read",
			text: fence + "\n<tool_call name=\"a\"></tool_call>\n" + fence + "\n<tool_call name=\"b\"></tool_call>",
			want: []textCall{{name: "b"}}, fenced: 1},
		{name: "tilde fence not closed by backticks",
			text: "~~~\n" + fence + "\n<tool_call name=\"a\"></tool_call>\n~~~\n", fenced: 1},
		{name: "a fence inside a value does not open a block",
			text: "<tool_call name=\"w\"><parameter name=\"c\">\n" + fence + "\ncode\n</parameter></tool_call>\n<tool_call name=\"x\"></tool_call>",
			want: []textCall{{name: "w", params: []textParam{{"c", fence + "\ncode\n"}}}, {name: "x"}}},
		{name: "tags inside a value are text with an end mark",
			text: "<tool_call name=\"w\"><parameter name=\"c\" end=\"X\"><tool_call name=\"evil\"></tool_call> & <b>X</parameter></tool_call>",
			want: []textCall{{name: "w", params: []textParam{{"c", "<tool_call name=\"evil\"></tool_call> & <b>"}}}}},
		{name: "a call inside a value without an end mark is refused",
			text: "<tool_call name=\"w\"><parameter name=\"c\">x\n<tool_call name=\"v\"><parameter name=\"d\">y</parameter></tool_call>",
			want: []textCall{{name: "w", err: `the value of parameter "c" contains <tool_call`}}},
		{name: "plain markup is fine", text: "<tool_call name=\"w\"><parameter name=\"c\"><b> & </tool_result></parameter></tool_call>",
			want: []textCall{{name: "w", params: []textParam{{"c", "<b> & </tool_result>"}}}}},
		{name: "end mark carries a closing tag",
			text: "<tool_call name=\"w\"><parameter name=\"c\" end=\"EOF\">a</parameter>b</tool_call>EOF</parameter></tool_call>",
			want: []textCall{{name: "w", params: []textParam{{"c", "a</parameter>b</tool_call>"}}}}},
		{name: "unclosed call", text: "<tool_call name=\"a\">\n<parameter name=\"p\">v</parameter>\n",
			want: []textCall{{name: "a", err: "not closed with </tool_call>"}}},
		{name: "unclosed parameter", text: "<tool_call name=\"a\"><parameter name=\"p\">v</tool_call>",
			want: []textCall{{name: "a", err: `parameter "p" is not closed`}}},
		{name: "a bad call stops reading", text: "<tool_call name=\"a\"></tool_call><tool_call>x</tool_call><tool_call name=\"c\"></tool_call>",
			want: []textCall{{name: "a"}, {err: "exactly <tool_call name="}}},
		{name: "text between parameters", text: "<tool_call name=\"a\"><parameter name=\"p\">v</parameter> oops </tool_call>",
			want: []textCall{{name: "a", err: "expected <parameter"}}},
		{name: "single quotes", text: "<tool_call name='a'></tool_call>", want: []textCall{{err: `expected name="..."`}}},
		{name: "unknown attribute", text: "<tool_call name=\"a\" id=\"1\"></tool_call>", want: []textCall{{err: "exactly <tool_call name="}}},
		{name: "duplicate parameter", text: "<tool_call name=\"a\"><parameter name=\"p\">1</parameter><parameter name=\"p\">2</parameter></tool_call>",
			want: []textCall{{name: "a", err: "given twice"}}},
		{name: "bad end mark", text: "<tool_call name=\"a\"><parameter name=\"p\" end=\"a-b\">1a-b</parameter></tool_call>",
			want: []textCall{{name: "a", err: "is not 1 to"}}},
		{name: "inline code is not exempt", text: "Use `<tool_call>` to call.", want: []textCall{{err: "exactly <tool_call name="}}},
		{name: "line numbers", text: "a\nb\n<tool_call name=\"x\"></tool_call>\n\n<tool_call name=\"y\">",
			want: []textCall{{name: "x"}, {name: "y", err: "at line 5"}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, fenced := parseTextCalls(tt.text)
			if fenced != tt.fenced {
				t.Errorf("fenced = %d, want %d", fenced, tt.fenced)
			}
			if len(got) != len(tt.want) {
				t.Fatalf("got %d calls %+v, want %d %+v", len(got), got, len(tt.want), tt.want)
			}
			for i, w := range tt.want {
				g := got[i]
				if w.err == "" && g.err != "" || w.err != "" && !strings.Contains(g.err, w.err) {
					t.Errorf("call %d: err = %q, want %q", i, g.err, w.err)
				}
				if g.name != w.name {
					t.Errorf("call %d: name = %q, want %q", i, g.name, w.name)
				}
				if w.err == "" && !equalParams(g.params, w.params) {
					t.Errorf("call %d: params = %q, want %q", i, g.params, w.params)
				}
			}
		})
	}
}

func equalParams(a, b []textParam) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

// Any value, however hostile, written by writeParam reads back byte for
// byte.
func TestTextCallRoundTrip(t *testing.T) {
	values := []string{"", "\n", "\n\nx\n", "plain", "</parameter>", "END</parameter>", "a</parameter>END1</parameter>END",
		"<tool_call name=\"x\">", "</tool_call>", "```\n<tool_call name=\"a\"></tool_call>\n```", "\r\n\x00\xff", "END", "ENDEND1END2</parameter>"}
	for _, v := range values {
		text := "prose\n" + renderCall("write_file", textParam{"path", "p"}, textParam{"content", v}) + "\ntrailing"
		calls, _ := parseTextCalls(text)
		if len(calls) != 1 || calls[0].err != "" || len(calls[0].params) != 2 || calls[0].params[1].value != v {
			t.Errorf("value %q: read back %+v from %q", v, calls, text)
		}
	}
}

func FuzzParseTextCalls(f *testing.F) {
	f.Add("<tool_call name=\"a\"><parameter name=\"p\" end=\"E\">x</parameter>E</parameter></tool_call>", "v")
	f.Add("```\n<tool_call name=\"a\">\n```\n<tool_call", "\n")
	f.Add("<tool_call name=\"a\">", "</parameter>")
	f.Fuzz(func(t *testing.T, text, value string) {
		calls, _ := parseTextCalls(text)
		for i, c := range calls {
			if c.err != "" {
				if i != len(calls)-1 {
					t.Fatalf("reading went on after a bad call: %+v", calls)
				}
				continue
			}
			// An accepted call has a valid name and reads back the same
			// when written again.
			if c.name == "" || len(c.name) > maxNameLen || strings.IndexFunc(c.name, func(r rune) bool { return r > 127 || !isNameByte(byte(r)) }) >= 0 {
				t.Fatalf("accepted a call named %q", c.name)
			}
			again, _ := parseTextCalls(renderCall(c.name, c.params...))
			if len(again) != 1 || again[0].err != "" || !equalParams(again[0].params, c.params) {
				t.Fatalf("call %+v does not read back: %+v", c, again)
			}
		}
		got, _ := parseTextCalls(renderCall("w", textParam{"content", value}))
		if len(got) != 1 || got[0].err != "" || got[0].params[0].value != value {
			t.Fatalf("value %q read back as %+v", value, got)
		}
	})
}

// Pathological input is read in linear time: each of these would take
// hours if a search restarted at every "<tool_call" or line.
func TestParseTextCallsHugeInput(t *testing.T) {
	const n = 1 << 19
	inputs := []string{
		strings.Repeat("<tool_call", n),
		strings.Repeat("```\n<tool_call name=\"a\">\n", n/8),
		"<tool_call name=\"a\"><parameter name=\"p\">" + strings.Repeat("</parameter", n),
		"<tool_call name=\"a\"><parameter name=\"p\" end=\"E\">" + strings.Repeat("</parameter>", n),
		strings.Repeat("<tool_call name=\"a\"></tool_call>", n/8),
		strings.Repeat("x", 8*n),
	}
	for i, in := range inputs {
		calls, _ := parseTextCalls(in)
		if i == 4 && len(calls) != n/8 {
			t.Errorf("input %d: %d calls, want %d", i, len(calls), n/8)
		}
	}
}

func TestCallArguments(t *testing.T) {
	spec := ToolSpec{Name: "t", Parameters: schema([]string{"path", "n"},
		prop{"path", "string", ""}, prop{"n", "integer", ""}, prop{"f", "boolean", ""}, prop{"list", "array", ""})}
	tests := []struct {
		params  []textParam
		want    string
		wantErr string
	}{
		{params: []textParam{{"path", " a b\n"}, {"n", " 42\n"}}, want: `{"path":" a b\n","n":42}`},
		{params: []textParam{{"n", "1"}, {"path", "x"}, {"f", "true"}, {"list", "[1, 2]"}}, want: `{"n":1,"path":"x","f":true,"list":[1,2]}`},
		{params: []textParam{{"path", "x"}}, wantErr: `missing required parameter "n"`},
		{params: []textParam{}, wantErr: `missing required parameter "path", "n"`},
		{params: []textParam{{"path", "x"}, {"n", "4.5"}}, wantErr: `parameter "n" must be an integer`},
		{params: []textParam{{"path", "x"}, {"n", "1"}, {"f", "yes"}}, wantErr: `parameter "f" must be true or false`},
		{params: []textParam{{"path", "x"}, {"n", "1"}, {"list", "{}"}}, wantErr: `parameter "list" must be a JSON array`},
		{params: []textParam{{"path", "x"}, {"n", "1"}, {"mode", "1"}}, wantErr: `t has no parameter "mode"; its parameters are: f, list, n, path`},
	}
	for _, tt := range tests {
		got, err := callArguments(spec, tt.params)
		switch {
		case tt.wantErr != "" && (err == nil || !strings.Contains(err.Error(), tt.wantErr)):
			t.Errorf("%v: err = %v, want %q", tt.params, err, tt.wantErr)
		case tt.wantErr == "" && err != nil:
			t.Errorf("%v: %v", tt.params, err)
		case tt.wantErr == "" && got != tt.want:
			t.Errorf("%v: got %s, want %s", tt.params, got, tt.want)
		case tt.wantErr == "" && !json.Valid([]byte(got)):
			t.Errorf("%v: invalid JSON %s", tt.params, got)
		}
	}
}
