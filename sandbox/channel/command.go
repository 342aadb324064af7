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
	// KillGrace is how long past its timeout the helper waits for a
	// command it killed to end, before it answers without its exit code.
	KillGrace = 20 * time.Second
)

// runCommand runs req.Cmd as the command wrapper would (sh -c, in a
// session of its own, its environment marked with req.Mark), with the
// helper itself as its watchdog: at the timeout, or when ctx ends (a
// cancel, or the helper's end), reap kills every process of the command.
// No wrapper process is started: a command costs one process start.
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
	cmd := exec.Command("sh", "-c", req.Cmd)
	cmd.Env = append(append(os.Environ(), req.Env...), "RUNNER_EXEC="+mark)
	cmd.Dir = req.Dir
	// Its own session, as an exec's; stdin is /dev/null, as the wrapper
	// gives the command.
	cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true}
	out := cmdwrap.NewPlainOutput(max)
	var omu sync.Mutex
	// The command writes to pipes of the helper's own rather than through
	// os/exec's copying, so that the helper knows when a process left
	// behind keeps the output open (Detached) whatever the exit code.
	streams, err := newStreams(cmd, lockedWriter{&omu, out.Stdout()}, lockedWriter{&omu, out.Stderr()})
	if err != nil {
		return nil, err
	}
	defer streams.close()
	oom0 := oomKills()
	start := time.Now()
	if err := cmd.Start(); err != nil {
		return nil, fmt.Errorf("start the command: %w", err)
	}
	streams.started()
	root := cmd.Process.Pid
	waited := make(chan struct{})
	go func() {
		cmd.Wait()
		close(waited)
	}()
	timer := time.NewTimer(timeout)
	defer timer.Stop()
	cancelled, timedOut := false, false
	select {
	case <-waited:
	case <-ctx.Done():
		cancelled = true
	case <-timer.C:
		timedOut = true
	}
	ended := !cancelled && !timedOut
	if !ended {
		reap(mark, root)
		// Killed, its first process ends at once; one the kernel cannot
		// end (stuck in a system call) is let go after a while.
		g := time.NewTimer(KillGrace)
		select {
		case <-waited:
			ended = true
		case <-g.C:
		}
		g.Stop()
	}
	res := &sandbox.ExecResult{Detached: !streams.drain(drainPeriod)}
	res.Duration = time.Since(start)
	omu.Lock()
	out.TimedOut = timedOut
	out.OOMKilled = oomKills() > oom0
	out.Fill(res)
	omu.Unlock()
	res.ExitCode = 137 // as a shell reports a KILL
	if ended {
		res.ExitCode = exitCode(cmd.ProcessState)
	}
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
