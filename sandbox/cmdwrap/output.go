package cmdwrap

import (
	"bytes"

	"github.com/runner-dev/runner/sandbox"
)

// Output collects the three views of a command's output, as the wrapper
// prints it. Its writers are called from one goroutine (or, for a command
// with separate stdout and stderr readers, under one lock) only.
type Output struct {
	stdout, stderr, combined *HeadTail
	timeoutMark, oomMark     []byte
	// TimedOut and OOMKilled are set when the wrapper's marks were seen.
	TimedOut, OOMKilled bool
}

// NewOutput makes an Output that keeps max bytes of each view and looks for
// the marks of the command marked mark.
func NewOutput(max int, mark string) *Output {
	return &Output{
		stdout:      NewHeadTail(max),
		stderr:      NewHeadTail(max),
		combined:    NewHeadTail(max),
		timeoutMark: []byte(mark + ":timeout\n"),
		oomMark:     []byte(mark + ":oom\n"),
	}
}

type streamWriter struct {
	o      *Output
	stream *HeadTail
	stderr bool
}

// Stdout is the writer for the command's standard output.
func (o *Output) Stdout() *streamWriter { return &streamWriter{o: o, stream: o.stdout} }

// Stderr is the writer for the command's standard error.
func (o *Output) Stderr() *streamWriter { return &streamWriter{o: o, stream: o.stderr, stderr: true} }

// Write records p. On stderr it also looks for the wrapper's marks (timed
// out, out of memory), each written in one piece, and keeps them out of the
// output.
func (w *streamWriter) Write(p []byte) (int, error) {
	n := len(p)
	if w.stderr {
		p = cut(p, w.o.timeoutMark, &w.o.TimedOut)
		p = cut(p, w.o.oomMark, &w.o.OOMKilled)
	}
	w.stream.Write(p)
	w.o.combined.Write(p)
	return n, nil
}

// Fill sets the output fields of res (streams, TimedOut, OOMKilled,
// Truncated, Dropped) from what was recorded.
func (o *Output) Fill(res *sandbox.ExecResult) {
	res.Stdout = o.stdout.String()
	res.Stderr = o.stderr.String()
	res.Output = o.combined.String()
	res.TimedOut = o.TimedOut
	res.OOMKilled = o.OOMKilled
	res.Truncated = o.stdout.Dropped() > 0 || o.stderr.Dropped() > 0 || o.combined.Dropped() > 0
	res.Dropped = o.combined.Dropped()
}

// cut removes mark from p, setting *seen when it was there.
func cut(p, mark []byte, seen *bool) []byte {
	i := bytes.Index(p, mark)
	if i < 0 {
		return p
	}
	*seen = true
	return append(p[:i:i], p[i+len(mark):]...)
}
