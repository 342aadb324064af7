package sandbox

import "bytes"

// execOutput collects the three views of a command's output. Its writers
// are called from one goroutine (the demultiplexer) only.
type execOutput struct {
	stdout, stderr, combined *headTail
	mark                     []byte
	timedOut                 bool
}

func newExecOutput(max int, mark string) *execOutput {
	return &execOutput{
		stdout:   newHeadTail(max),
		stderr:   newHeadTail(max),
		combined: newHeadTail(max),
		mark:     []byte(mark + "\n"),
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

// Write records p. On stderr it also looks for the watchdog's timeout mark,
// which is written in one piece, and keeps it out of the output.
func (w *streamWriter) Write(p []byte) (int, error) {
	n := len(p)
	if w.stderr {
		if i := bytes.Index(p, w.o.mark); i >= 0 {
			w.o.timedOut = true
			p = append(p[:i:i], p[i+len(w.o.mark):]...)
		}
	}
	w.stream.Write(p)
	w.o.combined.Write(p)
	return n, nil
}
