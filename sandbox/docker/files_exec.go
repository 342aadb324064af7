package docker

import (
	"bytes"
	"context"
	_ "embed"
	"fmt"
	"io/fs"
	"strings"
	"time"

	"github.com/moby/moby/api/pkg/stdcopy"
	"github.com/moby/moby/client"

	"github.com/runner-dev/runner/sandbox"
	"github.com/runner-dev/runner/sandbox/cmdwrap"
)

//go:embed files.sh
var filesScript string

// fileOpTimeout bounds one file operation, from the host: a helper still
// running then (blocked opening a FIFO swapped in under it, say) is killed.
var fileOpTimeout = 30 * time.Second

// fileOp is one run of files.sh.
type fileOp struct {
	name  string   // "read", "write" or "list"
	path  string   // the path as the caller gave it, for messages
	args  []string // after the operation's name
	stdin []byte   // sent on the helper's stdin, then closed; nil for none
	max   int      // stdout beyond this many bytes is dropped and flagged
}

// fileResult is what the helper said.
type fileResult struct {
	code     int
	stdout   []byte
	over     bool // stdout went past fileOp.max
	stderr   string
	timedOut bool
}

// runFile runs the file helper as the sandbox user, in one exec of its
// own: its stdin carries the data of a write, its stdout the data of a
// read. The host bounds it with fileOpTimeout and, when that passes or ctx
// ends, kills every process of the helper before returning.
func (d *Sandbox) runFile(ctx context.Context, op fileOp) (fileResult, error) {
	if err := d.usable(); err != nil {
		return fileResult{}, err
	}
	mark := cmdwrap.NewMark()
	cmd := append([]string{"sh", "-c", filesScript, "runner-files", op.name, sandbox.Workdir}, op.args...)
	created, err := d.e.cli.ExecCreate(ctx, d.id, client.ExecCreateOptions{
		User:         user,
		AttachStdin:  op.stdin != nil,
		AttachStdout: true,
		AttachStderr: true,
		// The mark lets kill find the helper and whatever it started.
		Env:        []string{"RUNNER_EXEC=" + mark},
		WorkingDir: sandbox.Workdir,
		Cmd:        cmd,
	})
	if err != nil {
		return fileResult{}, d.execError(ctx, err)
	}
	att, err := d.e.cli.ExecAttach(ctx, created.ID, client.ExecAttachOptions{})
	if err != nil {
		return fileResult{}, d.execError(ctx, err)
	}
	defer att.Close()
	stdout := &limitedBuffer{max: op.max}
	stderr := &limitedBuffer{max: 4 << 10}
	done := make(chan error, 1)
	go func() {
		_, err := stdcopy.StdCopy(stdout, stderr, att.Reader)
		done <- err
	}()
	sent := make(chan error, 1)
	if op.stdin != nil {
		go func() {
			// Only the data's delivery counts: the helper reads exactly
			// len(stdin) bytes and checks the size it wrote, so it may
			// exit, and the host close the stream, before the half-close
			// below is through; that close failing then is no failure.
			_, err := att.Conn.Write(op.stdin)
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
		return fileResult{}, fmt.Errorf("%s %s: %w", op.name, op.path, ctx.Err())
	case <-deadline.C:
		att.Close()
		<-done
		d.kill(ctx, mark)
		return fileResult{timedOut: true}, nil
	}
	// The helper is over: a writer still blocked on its stdin gives up.
	att.Close()
	sendErr := <-sent
	code, running, err := d.exitCode(ctx, created.ID)
	if err != nil {
		return fileResult{}, d.execError(ctx, err)
	}
	if readErr != nil || running {
		if err := d.stoppedError(ctx); err != nil {
			return fileResult{}, fmt.Errorf("%s %s: %w", op.name, op.path, err)
		}
	}
	if readErr != nil {
		return fileResult{}, fmt.Errorf("%s %s: read the helper's output: %w", op.name, op.path, readErr)
	}
	if sendErr != nil && code == 0 {
		return fileResult{}, fmt.Errorf("%s %s: send the data: %w", op.name, op.path, sendErr)
	}
	return fileResult{code: code, stdout: stdout.buf.Bytes(), over: stdout.over, stderr: stderr.buf.String()}, nil
}

// fileError maps the helper's exit code to the package's errors.
func fileError(op fileOp, res fileResult) error {
	what := op.name + " " + op.path
	switch {
	case res.timedOut:
		// Opening a regular file does not block: what did is a FIFO put
		// there after the helper looked, which the caller should hear of
		// as such rather than as a failure of the sandbox.
		return fmt.Errorf("%s: did not finish within %s: %w (a FIFO?)", what, fileOpTimeout, sandbox.ErrNotRegular)
	case res.code == 0:
		return nil
	}
	switch res.code {
	case 2:
		return fmt.Errorf("%s: %w", what, sandbox.ErrNotFound)
	case 13:
		return fmt.Errorf("%s: %w", what, fs.ErrPermission)
	case 16:
		return fmt.Errorf("%s: the file kept changing while being opened; try again", what)
	case 18:
		return fmt.Errorf("%s: resolves to %s through a symlink: %w", what, res.stdout, sandbox.ErrOutsideWorkspace)
	case 19:
		return fmt.Errorf("%s: %w", what, sandbox.ErrNotRegular)
	case 20:
		return fmt.Errorf("%s: %w", what, sandbox.ErrNotDir)
	case 21:
		return fmt.Errorf("%s: %w", what, sandbox.ErrIsDir)
	case 27:
		return fmt.Errorf("%s: %w: %s bytes, the limit is %d; read it in parts with a command", what, sandbox.ErrTooLarge, res.stdout, sandbox.MaxReadSize)
	case 74:
		return fmt.Errorf("%s: the data did not arrive whole; the file may be partly written", what)
	}
	return fmt.Errorf("%s: exit code %d: %s", what, res.code, strings.TrimSpace(res.stderr))
}

// limitedBuffer keeps the first max bytes written to it and notes whether
// more came.
type limitedBuffer struct {
	buf  bytes.Buffer
	max  int
	over bool
}

func (b *limitedBuffer) Write(p []byte) (int, error) {
	n := len(p)
	if room := b.max - b.buf.Len(); len(p) > room {
		p, b.over = p[:max(room, 0)], true
	}
	b.buf.Write(p)
	return n, nil
}
