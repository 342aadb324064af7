package tasks

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strings"
	"unicode/utf8"

	"go.yaml.in/yaml/v3"
)

// parseJSONL reads a JSON Lines task file as a stream: one JSON object per
// line, each a task, except that the first non-blank line may be
// {"defaults": {...}}, holding the defaults for the whole file. Blank lines
// are ignored, and a UTF-8 byte order mark at the start is skipped. A line
// is never held whole beyond lineLimit; an error is returned only when in
// cannot be read.
func (r *reader) parseJSONL(in io.Reader) (*spec, []*spec, error) {
	var defaults *spec
	var specs []*spec
	first := true
	lines := bufio.NewReaderSize(in, 64<<10)
	limit := lineLimit(DefaultMaxPromptSize)
	for line := 1; ; line++ {
		text, long, err := readLine(lines, limit)
		if err != nil && !errors.Is(err, io.EOF) {
			return nil, nil, fmt.Errorf("line %d: %w", line, err)
		}
		if line == 1 {
			text = bytes.TrimPrefix(text, utf8BOM)
		}
		text = bytes.TrimSuffix(text, []byte("\r"))
		switch {
		case long:
			r.problems = append(r.problems, Problem{File: r.file, Line: line, Msg: fmt.Sprintf(
				"the line is over %s, more than a task with a prompt of max_prompt_size (%s) can need", humanSize(limit), humanSize(r.maxPrompt(defaults)))})
			first = false
		case len(bytes.TrimSpace(text)) == 0:
		default:
			if d := r.jsonlLine(text, line, first, defaults, &specs); d != nil {
				defaults = d
				limit = lineLimit(r.maxPrompt(defaults))
			}
			first = false
		}
		if errors.Is(err, io.EOF) {
			break
		}
	}
	if len(specs) == 0 && len(r.problems) == 0 {
		r.add(nil, at{}, "the file holds no tasks")
	}
	return defaults, specs, nil
}

// jsonlLine decodes one non-blank line: a task, appended to specs, or the
// defaults, returned.
func (r *reader) jsonlLine(text []byte, line int, first bool, defaults *spec, specs *[]*spec) *spec {
	if _, col, what, bad := invalidUTF8(text); bad {
		r.problems = append(r.problems, Problem{File: r.file, Line: line, Col: col, Msg: what})
		return nil
	}
	n, err := jsonNode(text, line)
	if err != nil {
		r.problems = append(r.problems, Problem{File: r.file, Line: line, Col: err.col, Msg: "JSON syntax: " + err.msg})
		return nil
	}
	if n.Kind != yaml.MappingNode {
		r.add(n, at{}, "want a JSON object (a task), got %s", describe(n))
		return nil
	}
	if hasKey(n, "defaults") {
		switch {
		case !first:
			r.add(n, at{}, "defaults must be on the first line")
		case len(n.Content) != 2:
			r.add(n, at{}, `the defaults line must hold only the "defaults" key`)
		default:
			return r.defaults(n.Content[1])
		}
		return nil
	}
	*specs = append(*specs, r.task(n))
	return nil
}

// lineLimit bounds a JSON Lines line, given the prompt cap: a prompt may
// grow six times when escaped (\u0000), and the other keys need room too.
func lineLimit(maxPrompt int64) int64 {
	return 6*maxPrompt + 1<<20
}

// readLine reads one line, without its '\n'. A line over limit is read to
// its end but not kept: long is true and text empty. err is io.EOF at the
// end of the input, with the last line's text if it had no newline.
func readLine(in *bufio.Reader, limit int64) (text []byte, long bool, err error) {
	for {
		chunk, err := in.ReadSlice('\n')
		if !long {
			if int64(len(text)+len(chunk)) > limit+1 { // +1: the newline
				long, text = true, nil
			} else {
				text = append(text, chunk...)
			}
		}
		switch {
		case errors.Is(err, bufio.ErrBufferFull):
			continue
		case err != nil:
			return text, long, err
		}
		return bytes.TrimSuffix(text, []byte("\n")), long, nil
	}
}

func hasKey(m *yaml.Node, key string) bool {
	for i := 0; i+1 < len(m.Content); i += 2 {
		if m.Content[i].Value == key {
			return true
		}
	}
	return false
}

// jsonError is a syntax error at a 1-based column of a line.
type jsonError struct {
	col int
	msg string
}

// syntaxError locates err, the decoder's error, in text.
func syntaxError(text []byte, dec *json.Decoder, err error) *jsonError {
	offset := dec.InputOffset()
	var se *json.SyntaxError
	if errors.As(err, &se) {
		offset = se.Offset
	}
	offset = min(max(offset, 0), int64(len(text)))
	msg := err.Error()
	if errors.Is(err, io.ErrUnexpectedEOF) {
		msg = "the line ends before the JSON value does"
	}
	return &jsonError{col: column(text, int(offset)), msg: msg}
}

// column turns a byte offset in text into a 1-based column in characters.
func column(text []byte, offset int) int {
	return utf8.RuneCount(text[:offset]) + 1
}

// jsonNode parses one line of JSON strictly into a yaml.Node tree, so that
// both formats share one decoder. Every node carries the given line and its
// column within text.
func jsonNode(text []byte, line int) (*yaml.Node, *jsonError) {
	p := &jsonParser{dec: json.NewDecoder(bytes.NewReader(text)), text: text, line: line}
	p.dec.UseNumber()
	n, err := p.value()
	if err != nil {
		return nil, syntaxError(text, p.dec, err)
	}
	switch _, col, err := p.next(); {
	case err == nil:
		return nil, &jsonError{col: col, msg: "more than one JSON value on the line"}
	case !errors.Is(err, io.ErrUnexpectedEOF):
		return nil, syntaxError(text, p.dec, err)
	}
	return n, nil
}

type jsonParser struct {
	dec  *json.Decoder
	text []byte
	line int
}

// next reads a token and the column where it starts.
func (p *jsonParser) next() (json.Token, int, error) {
	start := int(p.dec.InputOffset())
	for start < len(p.text) && strings.IndexByte(" \t\r\n,:", p.text[start]) >= 0 {
		start++
	}
	tok, err := p.dec.Token()
	if errors.Is(err, io.EOF) {
		err = io.ErrUnexpectedEOF
	}
	return tok, column(p.text, start), err
}

func (p *jsonParser) value() (*yaml.Node, error) {
	tok, col, err := p.next()
	if err != nil {
		return nil, err
	}
	n := &yaml.Node{Line: p.line, Column: col, Kind: yaml.ScalarNode}
	switch t := tok.(type) {
	case json.Delim:
		switch t {
		case '{':
			n.Kind, n.Tag = yaml.MappingNode, "!!map"
			for p.dec.More() {
				ktok, kcol, err := p.next()
				if err != nil {
					return nil, err
				}
				key := &yaml.Node{Kind: yaml.ScalarNode, Tag: "!!str", Value: fmt.Sprint(ktok), Line: p.line, Column: kcol}
				v, err := p.value()
				if err != nil {
					return nil, err
				}
				n.Content = append(n.Content, key, v)
			}
		case '[':
			n.Kind, n.Tag = yaml.SequenceNode, "!!seq"
			for p.dec.More() {
				v, err := p.value()
				if err != nil {
					return nil, err
				}
				n.Content = append(n.Content, v)
			}
		}
		if _, _, err := p.next(); err != nil { // the closing delimiter
			return nil, err
		}
	case string:
		n.Tag, n.Value, n.Style = "!!str", t, yaml.DoubleQuotedStyle
	case json.Number:
		n.Tag, n.Value = "!!int", t.String()
		if strings.ContainsAny(n.Value, ".eE") {
			n.Tag = "!!float"
		}
	case bool:
		n.Tag, n.Value = "!!bool", fmt.Sprint(t)
	case nil:
		n.Tag, n.Value = "!!null", "null"
	}
	return n, nil
}
