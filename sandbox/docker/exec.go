package docker

import (
	"context"
	"fmt"
	"io"
	"slices"
	"time"

	"github.com/moby/moby/api/pkg/stdcopy"
	"github.com/moby/moby/client"

	"github.com/runner-dev/runner/internal/panics"

	"github.com/runner-dev/runner/sandbox"
	"github.com/runner-dev/runner/sandbox/cmdwrap"
)

const (
	// drainPeriod is how long Exec waits for the output to close after the
	// command exited, before it decides a leftover process holds it open.
	drainPeriod = 500 * time.Millisecond
	// hostGrace is how long past its timeout Exec waits for the in-sandbox
	// watchdog before it kills the command from a second exec.
	hostGrace = 20 * time.Second
)

// Exec runs cmd in the sandbox. See Sandbox.Exec for the contract.
func (d *Sandbox) Exec(ctx context.Context, cmd string, opt sandbox.ExecOptions) (sandbox.ExecResult, error) {
	if err := d.usable(); err != nil {
		return sandbox.ExecResult{}, err
	}
	if opt.Timeout <= 0 {
		opt.Timeout = sandbox.DefaultExecTimeout
	}
	if opt.MaxOutput <= 0 {
		opt.MaxOutput = sandbox.DefaultMaxOutput
	}
	dir, err := resolve(opt.Dir)
	if err != nil {
		return sandbox.ExecResult{}, err
	}
	if res, err, ok := d.link().Exec(ctx, cmd, dir, opt); ok {
		return res, err
	}
	mark := cmdwrap.NewMark()
	start := time.Now()
	created, err := d.e.cli.ExecCreate(ctx, d.id, client.ExecCreateOptions{
		User: user,
		// Stdin is the watchdog's: closing it ends the command (exec.sh).
		AttachStdin:  true,
		AttachStdout: true,
		AttachStderr: true,
		Env:          append(slices.Clip(opt.Env), "RUNNER_EXEC="+mark),
		WorkingDir:   dir,
		Cmd:          []string{"sh", "-c", cmdwrap.Script, "runner-exec", "run", mark, cmd},
	})
	if err != nil {
		return sandbox.ExecResult{}, d.execError(ctx, err)
	}
	att, err := d.e.cli.ExecAttach(ctx, created.ID, client.ExecAttachOptions{})
	if err != nil {
		return sandbox.ExecResult{}, d.execError(ctx, err)
	}
	out := cmdwrap.NewOutput(opt.MaxOutput, mark)
	done := panics.Go(ctx, func() error {
		_, err := stdcopy.StdCopy(out.Stdout(), out.Stderr(), att.Reader)
		return err
	})
	stop := func() { att.Close(); <-done }
	// timeUp wakes the watchdog, which kills the command and says so. It
	// also wakes if the runner dies, since the engine then closes stdin.
	timeUp := func() {
		_, _ = att.Conn.Write([]byte("\n"))
		_ = att.CloseWrite()
	}

	var res sandbox.ExecResult
	var readErr error
	poll := 200 * time.Millisecond
	timer := time.NewTimer(poll)
	defer timer.Stop()
	deadline := time.NewTimer(opt.Timeout)
	defer deadline.Stop()
	hostDeadline := start.Add(opt.Timeout + hostGrace)
wait:
	for {
		select {
		case readErr = <-done:
			break wait
		case <-ctx.Done():
			timeUp()
			stop()
			d.kill(ctx, mark)
			return sandbox.ExecResult{}, fmt.Errorf("exec: %w", ctx.Err())
		case <-deadline.C:
			timeUp()
		case <-timer.C:
			ins, err := d.e.cli.ExecInspect(ctx, created.ID, client.ExecInspectOptions{})
			if err != nil {
				stop()
				return sandbox.ExecResult{}, d.execError(ctx, err)
			}
			if !ins.Running {
				// The command is over; something it left behind may still
				// hold the output open. Give it a moment, then let go.
				select {
				case readErr = <-done:
				case <-time.After(drainPeriod):
					stop()
					res.Detached = true
				}
				break wait
			}
			if time.Now().After(hostDeadline) {
				// The watchdog did not finish the command (a command can
				// kill it): kill from a second exec.
				stop()
				d.kill(ctx, mark)
				out.TimedOut = true
				break wait
			}
			poll = min(poll*2, 2*time.Second)
			timer.Reset(poll)
		}
	}
	// The exit code is read only now, once the output has drained.
	code, running, err := d.exitCode(ctx, created.ID)
	if err != nil {
		return sandbox.ExecResult{}, d.execError(ctx, err)
	}
	if readErr != nil || running || code >= 128 && !out.TimedOut && !out.OOMKilled {
		if err := d.stoppedError(ctx); err != nil {
			return sandbox.ExecResult{}, fmt.Errorf("exec: %w", err)
		}
	}
	if readErr != nil {
		return sandbox.ExecResult{}, fmt.Errorf("exec: read output: %w", readErr)
	}
	res.ExitCode = code
	out.Fill(&res)
	res.Notice = d.link().TakeNotice()
	res.Duration = time.Since(start)
	return res, nil
}

// exitCode waits briefly for the engine to record the end of the exec.
func (d *Sandbox) exitCode(ctx context.Context, id string) (code int, running bool, err error) {
	for i := 0; ; i++ {
		ins, err := d.e.cli.ExecInspect(ctx, id, client.ExecInspectOptions{})
		if err != nil {
			return 0, false, err
		}
		if !ins.Running || i == 40 {
			return ins.ExitCode, ins.Running, nil
		}
		select {
		case <-ctx.Done():
			return 0, false, ctx.Err()
		case <-time.After(25 * time.Millisecond):
		}
	}
}

// kill stops every process of the command marked mark, from a second exec.
// It is used when the caller gives up on a command; it is best effort.
func (d *Sandbox) kill(ctx context.Context, mark string) {
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 15*time.Second)
	defer cancel()
	// Attached, so that reading to the end waits for the kill to finish.
	created, err := d.e.cli.ExecCreate(ctx, d.id, client.ExecCreateOptions{
		User:         user,
		AttachStdout: true,
		AttachStderr: true,
		Cmd:          []string{"sh", "-c", cmdwrap.Script, "runner-exec", "kill", mark},
	})
	if err != nil {
		return
	}
	att, err := d.e.cli.ExecAttach(ctx, created.ID, client.ExecAttachOptions{})
	if err != nil {
		return
	}
	defer att.Close()
	_, _ = io.Copy(io.Discard, att.Reader)
}

// execError explains an engine error met while running a command: most
// often the container is gone or stopped.
func (d *Sandbox) execError(ctx context.Context, err error) error {
	if serr := d.stoppedError(ctx); serr != nil {
		return fmt.Errorf("exec: %w", serr)
	}
	return d.e.explain("exec", "", err)
}
