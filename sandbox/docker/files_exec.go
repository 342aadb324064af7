package docker

import (
	"context"
	"fmt"
	"time"

	"github.com/moby/moby/api/pkg/stdcopy"
	"github.com/moby/moby/client"

	"github.com/runner-dev/runner/sandbox"
	"github.com/runner-dev/runner/sandbox/cmdwrap"
	"github.com/runner-dev/runner/sandbox/fileops"
)

// fileOpTimeout bounds one file operation, from the host: a helper still
// running then (blocked opening a FIFO swapped in under it, say) is killed.
var fileOpTimeout = 30 * time.Second

// runFile runs the file helper as the sandbox user, in one exec of its
// own: its stdin carries the data of a write, its stdout the data of a
// read. The host bounds it with fileOpTimeout and, when that passes or ctx
// ends, kills every process of the helper before returning.
func (d *Sandbox) runFile(ctx context.Context, op fileops.Op) (fileops.Result, error) {
	if err := d.usable(); err != nil {
		return fileops.Result{}, err
	}
	mark := cmdwrap.NewMark()
	created, err := d.e.cli.ExecCreate(ctx, d.id, client.ExecCreateOptions{
		User:         user,
		AttachStdin:  op.Stdin != nil,
		AttachStdout: true,
		AttachStderr: true,
		// The mark lets kill find the helper and whatever it started.
		Env:        []string{"RUNNER_EXEC=" + mark},
		WorkingDir: sandbox.Workdir,
		Cmd:        op.Command(),
	})
	if err != nil {
		return fileops.Result{}, d.execError(ctx, err)
	}
	att, err := d.e.cli.ExecAttach(ctx, created.ID, client.ExecAttachOptions{})
	if err != nil {
		return fileops.Result{}, d.execError(ctx, err)
	}
	defer att.Close()
	stdout := &fileops.LimitedBuffer{Max: op.Max}
	stderr := &fileops.LimitedBuffer{Max: 4 << 10}
	done := make(chan error, 1)
	go func() {
		_, err := stdcopy.StdCopy(stdout, stderr, att.Reader)
		done <- err
	}()
	sent := make(chan error, 1)
	if op.Stdin != nil {
		go func() {
			// Only the data's delivery counts: the helper reads exactly
			// len(stdin) bytes and checks the size it wrote, so it may
			// exit, and the host close the stream, before the half-close
			// below is through; that close failing then is no failure.
			_, err := att.Conn.Write(op.Stdin)
			if err == nil {
				att.CloseWrite()
			}
			sent <- err
		}()
	} else {
		sent <- nil
	}
	deadline := time.NewTimer(fileOpTimeout)
	defer deadline.Stop()
	var readErr error
	select {
	case readErr = <-done:
	case <-ctx.Done():
		att.Close()
		<-done
		d.kill(ctx, mark)
		return fileops.Result{}, fmt.Errorf("%s %s: %w", op.Name, op.Path, ctx.Err())
	case <-deadline.C:
		att.Close()
		<-done
		d.kill(ctx, mark)
		return fileops.Result{TimedOut: true}, nil
	}
	// The helper is over: a writer still blocked on its stdin gives up.
	att.Close()
	sendErr := <-sent
	code, running, err := d.exitCode(ctx, created.ID)
	if err != nil {
		return fileops.Result{}, d.execError(ctx, err)
	}
	if readErr != nil || running {
		if err := d.stoppedError(ctx); err != nil {
			return fileops.Result{}, fmt.Errorf("%s %s: %w", op.Name, op.Path, err)
		}
	}
	if readErr != nil {
		return fileops.Result{}, fmt.Errorf("%s %s: read the helper's output: %w", op.Name, op.Path, readErr)
	}
	if sendErr != nil && code == 0 {
		return fileops.Result{}, fmt.Errorf("%s %s: send the data: %w", op.Name, op.Path, sendErr)
	}
	return fileops.Result{Code: code, Stdout: stdout.Buf.Bytes(), Over: stdout.Over, Stderr: stderr.Buf.String()}, nil
}

// fileError maps the helper's exit code to the package's errors.
func fileError(op fileops.Op, res fileops.Result) error {
	return fileops.Error(op, res, fileOpTimeout)
}
