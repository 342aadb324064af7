package tasks

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strings"
	"unicode/utf8"

	"go.yaml.in/yaml/v3"
)

// parseJSONL reads a JSON Lines task file: one JSON object per line, each a
// task, except that the first non-blank line may be {"defaults": {...}},
// holding the defaults for the whole file. Blank lines are ignored.
func (r *reader) parseJSONL(data []byte) (*spec, []*spec) {
	var defaults *spec
	var specs []*spec
	first := true
	for i, text := range bytes.Split(data, []byte("\n")) {
		line := i + 1
		text = bytes.TrimSuffix(text, []byte("\r"))
		if len(bytes.TrimSpace(text)) == 0 {
			continue
		}
		n, err := jsonNode(text, line)
		if err != nil {
			r.problems = append(r.problems, Problem{File: r.file, Line: line, Col: err.col, Msg: "JSON syntax: " + err.msg})
			first = false
			continue
		}
		if n.Kind != yaml.MappingNode {
			r.add(n, at{}, "want a JSON object (a task), got %s", describe(n))
			first = false
			continue
		}
		if hasKey(n, "defaults") {
			switch {
			case !first:
				r.add(n, at{}, "defaults must be on the first line")
			case len(n.Content) != 2:
				r.add(n, at{}, `the defaults line must hold only the "defaults" key`)
			default:
				defaults = r.defaults(n.Content[1])
			}
			first = false
			continue
		}
		first = false
		specs = append(specs, r.task(n))
	}
	if len(specs) == 0 && len(r.problems) == 0 {
		r.add(nil, at{}, "the file holds no tasks")
	}
	return defaults, specs
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
