package termsafe

import (
	"bytes"
	"io"
)

// maxPending bounds the part of a line a Writer holds while it waits for
// the line's end: a longer line is written in pieces, each escaped whole.
const maxPending = 64 << 10

// Writer passes a stream of untrusted lines (a build's output, say) to a
// terminal: each line escaped by Escape, line ends kept. It holds an
// unfinished line until its end arrives or Flush is called, so that a
// character split across two writes is seen whole. It is not safe for
// concurrent use.
type Writer struct {
	w       io.Writer
	pending []byte
}

// NewWriter returns a Writer writing to w.
func NewWriter(w io.Writer) *Writer { return &Writer{w: w} }

// Write escapes the complete lines of p and keeps the rest for later. It
// reports len(p) written unless w fails.
func (s *Writer) Write(p []byte) (int, error) {
	s.pending = append(s.pending, p...)
	end := bytes.LastIndexByte(s.pending, '\n')
	if end < 0 && len(s.pending) < maxPending {
		return len(p), nil
	}
	var lines []byte
	if end >= 0 {
		lines, s.pending = s.pending[:end+1], append([]byte(nil), s.pending[end+1:]...)
	} else {
		lines, s.pending = s.pending, nil
	}
	var out bytes.Buffer
	for _, l := range bytes.SplitAfter(lines, []byte("\n")) {
		text, nl := bytes.CutSuffix(l, []byte("\n"))
		text = bytes.TrimSuffix(text, []byte("\r"))
		out.WriteString(Escape(string(text)))
		if nl {
			out.WriteByte('\n')
		}
	}
	if _, err := s.w.Write(out.Bytes()); err != nil {
		return 0, err
	}
	return len(p), nil
}

// Flush writes the unfinished line, escaped, with a line end.
func (s *Writer) Flush() error {
	if len(s.pending) == 0 {
		return nil
	}
	text := Escape(string(s.pending)) + "\n"
	s.pending = nil
	_, err := io.WriteString(s.w, text)
	return err
}
