package redact

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
)

// JSON returns data, one JSON value, with every string value redacted by
// String, one string at a time: a secret is found however JSON spells it
// (quotes and backslashes escaped), and a mask never runs from one string
// into the next or into the document's punctuation. Keys, their order and
// the other values are kept; the result is compact, without HTML
// escaping, and ends with a newline when data does.
func (r *Redactor) JSON(data []byte) ([]byte, error) {
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.UseNumber()
	var out bytes.Buffer
	// One frame per open object or array: how many tokens it has so far.
	type frame struct {
		object bool
		n      int
	}
	var stack []frame
	for {
		tok, err := dec.Token()
		if errors.Is(err, io.EOF) && len(stack) == 0 && out.Len() > 0 {
			break
		}
		if errors.Is(err, io.EOF) {
			err = io.ErrUnexpectedEOF
		}
		if err != nil {
			return nil, fmt.Errorf("redact JSON: %w", err)
		}
		isKey := false
		if d, closing := tok.(json.Delim); len(stack) > 0 && !(closing && (d == '}' || d == ']')) {
			top := &stack[len(stack)-1]
			switch {
			case top.object && top.n%2 == 1:
				out.WriteByte(':')
			case top.n > 0:
				out.WriteByte(',')
			}
			isKey = top.object && top.n%2 == 0
			top.n++
		}
		switch v := tok.(type) {
		case json.Delim:
			if v == '{' || v == '[' {
				stack = append(stack, frame{object: v == '{'})
			} else {
				stack = stack[:len(stack)-1]
			}
			out.WriteByte(byte(v.String()[0]))
		case string:
			if !isKey {
				v = r.String(v)
			}
			writeJSONString(&out, v)
		case json.Number:
			out.WriteString(v.String())
		case bool:
			fmt.Fprint(&out, v)
		case nil:
			out.WriteString("null")
		}
	}
	if bytes.HasSuffix(data, []byte("\n")) {
		out.WriteByte('\n')
	}
	return out.Bytes(), nil
}

func writeJSONString(out *bytes.Buffer, s string) {
	enc := json.NewEncoder(out)
	enc.SetEscapeHTML(false)
	enc.Encode(s)               // a string always encodes
	out.Truncate(out.Len() - 1) // Encode's newline
}
