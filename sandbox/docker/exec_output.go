package docker

import "bytes"

// execOutput collects the three views of a command's output. Its writers
// are called from one goroutine (the demultiplexer) only.
type execOutput struct {
	stdout, stderr, combined *headTail
	timeoutMark, oomMark     []byte
	timedOut, oomKilled      bool
}

func newExecOutput(max int, mark string) *execOutput {
	return &execOutput{
		stdout:      newHeadTail(max),
		stderr:      newHeadTail(max),
		combined:    newHeadTail(max),
		timeoutMark: []byte(mark + ":timeout\n"),
		oomMark:     []byte(mark + ":oom\n"),
	}
}

type streamWriter struct {
	o      *execOutput
	stream *headTail
	stderr bool
}

func (o *execOutput) stdoutWriter() *streamWriter { return &streamWriter{o: o, stream: o.stdout} }
func (o *execOutput) stderrWriter() *streamWriter {
	return &streamWriter{o: o, stream: o.stderr, stderr: true}
}

// Write records p. On stderr it also looks for the wrapper's marks (timed
// out, out of memory), each written in one piece, and keeps them out of the
// output.
func (w *streamWriter) Write(p []byte) (int, error) {
	n := len(p)
	if w.stderr {
		p = cut(p, w.o.timeoutMark, &w.o.timedOut)
		p = cut(p, w.o.oomMark, &w.o.oomKilled)
	}
	w.stream.Write(p)
	w.o.combined.Write(p)
	return n, nil
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
