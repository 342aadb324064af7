package cmdwrap

import (
	"bytes"
	"strconv"

	"github.com/runner-dev/runner/sandbox"
)

// Output collects the three views of a command's output, as the wrapper
// prints it. Its writers are called from one goroutine (or, for a command
// with separate stdout and stderr readers, under one lock) only.
type Output struct {
	stdout, stderr, combined *HeadTail
	timeoutMark, oomMark     []byte
	exitMark                 []byte
	// TimedOut and OOMKilled are set when the wrapper's marks were seen.
	TimedOut, OOMKilled bool
	// ExitCode is the command's, once the wrapper's exit mark was seen
	// (Exited is closed then).
	ExitCode int
	exited   chan struct{}
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
		exitMark:    []byte(mark + ":exit:"),
		exited:      make(chan struct{}),
	}
}

// NewPlainOutput makes an Output that keeps max bytes of each view and
// looks for no mark: for a runner of its own that knows without the
// wrapper when a command timed out or was killed for memory (the channel's
// helper), so that a command cannot forge either by printing a mark.
func NewPlainOutput(max int) *Output {
	return &Output{
		stdout:   NewHeadTail(max),
		stderr:   NewHeadTail(max),
		combined: NewHeadTail(max),
		exited:   make(chan struct{}),
	}
}

// Exited is closed when the wrapper said that the command is over: what
// still holds its output open is a process the command left behind.
func (o *Output) Exited() <-chan struct{} { return o.exited }

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
		p = w.o.cutExit(p)
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
	if len(mark) == 0 {
		return p
	}
	i := bytes.Index(p, mark)
	if i < 0 {
		return p
	}
	*seen = true
	return append(p[:i:i], p[i+len(mark):]...)
}

// cutExit removes the exit mark (MARK:exit:CODE\n) from p and records it.
func (o *Output) cutExit(p []byte) []byte {
	if len(o.exitMark) == 0 {
		return p
	}
	i := bytes.Index(p, o.exitMark)
	if i < 0 {
		return p
	}
	rest := p[i+len(o.exitMark):]
	j := bytes.IndexByte(rest, '\n')
	if j < 0 {
		return p
	}
	code, err := strconv.Atoi(string(rest[:j]))
	if err != nil {
		return p
	}
	select {
	case <-o.exited:
	default:
		o.ExitCode = code
		close(o.exited)
	}
	return append(p[:i:i], rest[j+1:]...)
}
