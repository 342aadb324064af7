package channel

import (
	"context"
	"fmt"
	"io"
	"os"
	"os/exec"
	"sync"
	"syscall"
	"time"

	"github.com/runner-dev/runner/sandbox"
	"github.com/runner-dev/runner/sandbox/cmdwrap"
)

const (
	// drainPeriod is how long a command's output may stay open after the
	// command exited (a process it left behind holds it), as with the
	// engine's exec.
	drainPeriod = 500 * time.Millisecond
	// KillGrace is how long past its timeout the helper waits for the
	// wrapper's watchdog before it kills the command itself (a command
	// can kill its watchdog).
	KillGrace = 20 * time.Second
)

// runCommand runs req.Cmd with the command wrapper, in a session of its
// own as the engine's exec would, so that the wrapper finds the command's
// processes the same way. The wrapper's stdin is a pipe held by the
// helper: closing it (at the timeout, on cancel, or when the helper dies)
// makes the watchdog kill every process of the command.
func runCommand(ctx context.Context, req Request) (*sandbox.ExecResult, error) {
	timeout := time.Duration(req.TimeoutNS)
	if timeout <= 0 {
		timeout = sandbox.DefaultExecTimeout
	}
	max := req.MaxOutput
	if max <= 0 {
		max = sandbox.DefaultMaxOutput
	}
	mark := req.Mark
	if !cmdwrap.ValidMark(mark) {
		return nil, fmt.Errorf("%w: exec mark %q", ErrMalformed, mark)
	}
	cmd := exec.Command("sh", "-c", cmdwrap.Script, "runner-exec", "run", mark, req.Cmd)
	cmd.Env = append(append(os.Environ(), req.Env...), "RUNNER_EXEC="+mark)
	cmd.Dir = req.Dir
	cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true}
	out := cmdwrap.NewOutput(max, mark)
	var omu sync.Mutex
	// The wrapper writes to pipes of the helper's own rather than through
	// os/exec's copying, so that the helper knows when a process left
	// behind keeps the output open (Detached) whatever the exit code.
	streams, err := newStreams(cmd, lockedWriter{&omu, out.Stdout()}, lockedWriter{&omu, out.Stderr()})
	if err != nil {
		return nil, err
	}
	defer streams.close()
	stdin, err := cmd.StdinPipe()
	if err != nil {
		return nil, err
	}
	start := time.Now()
	if err := cmd.Start(); err != nil {
		stdin.Close()
		return nil, fmt.Errorf("start the command: %w", err)
	}
	streams.started()
	waited := make(chan error, 1)
	go func() { waited <- cmd.Wait() }()
	timer := time.NewTimer(timeout)
	defer timer.Stop()
	var grace <-chan time.Time
	cancelled := false
	var werr error
wait:
	for {
		select {
		case werr = <-waited:
			break wait
		case <-ctx.Done():
			if !cancelled {
				cancelled = true
				stdin.Close()
				g := time.NewTimer(KillGrace)
				defer g.Stop()
				grace = g.C
			}
		case <-timer.C:
			stdin.Close()
			g := time.NewTimer(KillGrace)
			defer g.Stop()
			grace = g.C
		case <-grace:
			// The watchdog did not finish the command: kill it from a
			// second run of the wrapper, and stop waiting for it.
			killCommand(mark)
			omu.Lock()
			out.TimedOut = true
			omu.Unlock()
			werr = <-waited
			break wait
		}
	}
	stdin.Close()
	_ = werr // the exit status is read from ProcessState
	res := &sandbox.ExecResult{Detached: !streams.drain(drainPeriod)}
	res.Duration = time.Since(start)
	omu.Lock()
	out.Fill(res)
	omu.Unlock()
	res.ExitCode = exitCode(cmd.ProcessState)
	if cancelled {
		return nil, ctx.Err()
	}
	return res, nil
}

// exitCode is the wrapper's exit code as a shell reports it: 128+N when
// signal N ended it.
func exitCode(st *os.ProcessState) int {
	if st == nil {
		return -1
	}
	if ws, ok := st.Sys().(syscall.WaitStatus); ok && ws.Signaled() {
		return 128 + int(ws.Signal())
	}
	return st.ExitCode()
}

// killCommand kills every process of the command marked mark, waiting for
// the kill to finish (bounded).
func killCommand(mark string) {
	ctx, cancel := context.WithTimeout(context.Background(), 15*time.Second)
	defer cancel()
	k := exec.CommandContext(ctx, "sh", "-c", cmdwrap.Script, "runner-exec", "kill", mark)
	k.Env = append(os.Environ(), "RUNNER_EXEC_KILLER=1")
	_ = k.Run()
}

// lockedWriter serializes the writes of the two output readers.
type lockedWriter struct {
	mu *sync.Mutex
	w  io.Writer
}

func (l lockedWriter) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.w.Write(p)
}

// streams reads a command's stdout and stderr from two pipes.
type streams struct {
	readers, writers []*os.File
	done             sync.WaitGroup
	outs             []io.Writer
}

func newStreams(cmd *exec.Cmd, stdout, stderr io.Writer) (*streams, error) {
	s := &streams{outs: []io.Writer{stdout, stderr}}
	for range 2 {
		r, w, err := os.Pipe()
		if err != nil {
			s.close()
			return nil, err
		}
		s.readers, s.writers = append(s.readers, r), append(s.writers, w)
	}
	cmd.Stdout, cmd.Stderr = s.writers[0], s.writers[1]
	return s, nil
}

// started drops the helper's copies of the write ends and starts reading.
func (s *streams) started() {
	for _, w := range s.writers {
		w.Close()
	}
	s.writers = nil
	for i, r := range s.readers {
		s.done.Add(1)
		go func() {
			defer s.done.Done()
			io.Copy(s.outs[i], r)
		}()
	}
}

// drain waits up to d for both streams to end, and reports whether they
// did; after it, nothing more is read.
func (s *streams) drain(d time.Duration) bool {
	ended := make(chan struct{})
	go func() {
		s.done.Wait()
		close(ended)
	}()
	t := time.NewTimer(d)
	defer t.Stop()
	ok := true
	select {
	case <-ended:
	case <-t.C:
		ok = false
	}
	s.close()
	<-ended
	return ok
}

func (s *streams) close() {
	for _, f := range append(s.readers, s.writers...) {
		f.Close()
	}
}
