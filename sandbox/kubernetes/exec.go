package kubernetes

import (
	"context"
	"fmt"
	"io"
	"sync"
	"time"

	"github.com/runner-dev/runner/sandbox"
	"github.com/runner-dev/runner/sandbox/cmdwrap"
	"github.com/runner-dev/runner/sandbox/fileops"
)

const (
	// drainPeriod is how long Exec waits for the output to close after the
	// wrapper said the command exited, before it decides a leftover
	// process holds it open.
	drainPeriod = 500 * time.Millisecond
	// hostGrace is how long past its timeout Exec waits for the in-sandbox
	// watchdog before it kills the command from a second exec.
	hostGrace = 20 * time.Second
)

// Exec runs cmd in the sandbox. See sandbox.Sandbox for the contract.
func (s *Sandbox) Exec(ctx context.Context, cmd string, opt sandbox.ExecOptions) (sandbox.ExecResult, error) {
	if err := s.usable(); err != nil {
		return sandbox.ExecResult{}, err
	}
	if opt.Timeout <= 0 {
		opt.Timeout = sandbox.DefaultExecTimeout
	}
	if opt.MaxOutput <= 0 {
		opt.MaxOutput = sandbox.DefaultMaxOutput
	}
	dir, err := fileops.Resolve(opt.Dir)
	if err != nil {
		return sandbox.ExecResult{}, err
	}
	if res, err, ok := s.link().Exec(ctx, cmd, dir, opt); ok {
		return res, err
	}
	mark := cmdwrap.NewMark()
	start := time.Now()
	out := cmdwrap.NewOutput(opt.MaxOutput, mark)
	var mu sync.Mutex
	// Stdin is the watchdog's: closing it ends the command (exec.sh).
	stdinR, stdinW := io.Pipe()
	var once sync.Once
	timeUp := func() {
		once.Do(func() {
			go func() {
				_, _ = stdinW.Write([]byte("\n"))
				_ = stdinW.Close()
			}()
		})
	}
	defer stdinW.Close()
	streamCtx, cancel := context.WithCancel(context.WithoutCancel(ctx))
	defer cancel()
	type result struct {
		code int
		err  error
	}
	done := make(chan result, 1)
	argv := s.command(dir, append(append([]string(nil), opt.Env...), "RUNNER_EXEC="+mark), "sh", "-c", cmdwrap.Script, "runner-exec", "run", mark, cmd)
	go func() {
		code, err := s.stream(streamCtx, argv, stdinR, lockedWriter{&mu, out.Stdout()}, lockedWriter{&mu, out.Stderr()})
		done <- result{code, err}
	}()
	stop := func() result { cancel(); return <-done }

	var res sandbox.ExecResult
	var r result
	deadline := time.NewTimer(opt.Timeout)
	defer deadline.Stop()
	hostDeadline := time.NewTimer(opt.Timeout + hostGrace)
	defer hostDeadline.Stop()
	exited := out.Exited()
wait:
	for {
		select {
		case r = <-done:
			break wait
		case <-ctx.Done():
			timeUp()
			stop()
			s.kill(ctx, mark)
			return sandbox.ExecResult{}, fmt.Errorf("exec: %w", ctx.Err())
		case <-deadline.C:
			timeUp()
		case <-exited:
			// The command is over; something it left behind may still
			// hold the output open. Give it a moment, then let go.
			select {
			case r = <-done:
			case <-time.After(drainPeriod):
				stop()
				mu.Lock()
				r = result{code: out.ExitCode}
				mu.Unlock()
				res.Detached = true
			}
			break wait
		case <-hostDeadline.C:
			// The watchdog did not finish the command (a command can
			// kill it): kill from a second exec.
			stop()
			s.kill(ctx, mark)
			r = result{code: 137}
			mu.Lock()
			out.TimedOut = true
			mu.Unlock()
			break wait
		}
	}
	if r.err != nil {
		return sandbox.ExecResult{}, s.execError(ctx, "exec", r.err)
	}
	if r.code >= 128 && !out.TimedOut && !out.OOMKilled {
		if err := s.stoppedError(ctx); err != nil {
			return sandbox.ExecResult{}, fmt.Errorf("exec: %w", err)
		}
	}
	mu.Lock()
	defer mu.Unlock()
	res.ExitCode = r.code
	out.Fill(&res)
	res.Notice = s.link().TakeNotice()
	res.Duration = time.Since(start)
	return res, nil
}

// kill stops every process of the command marked mark, from a second exec.
// It is used when the caller gives up on a command; it is best effort.
func (s *Sandbox) kill(ctx context.Context, mark string) {
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 15*time.Second)
	defer cancel()
	_, _ = s.stream(ctx, s.command(sandbox.Workdir, nil, "sh", "-c", cmdwrap.Script, "runner-exec", "kill", mark), nil, io.Discard, io.Discard)
}
