package kubernetes

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"io/fs"
	"time"

	"github.com/runner-dev/runner/sandbox"
	"github.com/runner-dev/runner/sandbox/channel"
	"github.com/runner-dev/runner/sandbox/cmdwrap"
	"github.com/runner-dev/runner/sandbox/fileops"
)

// fileOpTimeout bounds one file operation, from the host: a helper still
// running then (blocked opening a FIFO swapped in under it, say) is killed.
var fileOpTimeout = 30 * time.Second

// ReadFile returns the content of a regular file in the workspace, read
// through the channel, else by the file helper, as the sandbox user (see
// fileops.Script).
func (s *Sandbox) ReadFile(ctx context.Context, p string) ([]byte, error) {
	abs, err := fileops.Resolve(p)
	if err != nil {
		return nil, err
	}
	if data, err, ok := channel.File(ctx, s.link(), s.usable, fileOpTimeout, func(ctx context.Context, c *channel.Client) ([]byte, error) { return c.ReadFile(ctx, abs) }); ok {
		return data, err
	}
	op := fileops.ReadOp(p, abs)
	res, err := s.runFile(ctx, op)
	if err != nil {
		return nil, err
	}
	return fileops.ReadData(op, res, fileOpTimeout)
}

// WriteFile writes data to a file in the workspace, creating its parents,
// by the file helper as the sandbox user.
func (s *Sandbox) WriteFile(ctx context.Context, p string, data []byte, mode fs.FileMode) error {
	abs, err := fileops.Resolve(p)
	if err != nil {
		return err
	}
	if abs == sandbox.Workdir {
		return fmt.Errorf("write %s: %w", p, sandbox.ErrIsDir)
	}
	if _, err, ok := channel.File(ctx, s.link(), s.usable, fileOpTimeout, func(ctx context.Context, c *channel.Client) (struct{}, error) {
		return struct{}{}, c.WriteFile(ctx, abs, data, mode)
	}); ok {
		return err
	}
	op := fileops.WriteOp(p, abs, data, mode)
	res, err := s.runFile(ctx, op)
	if err != nil {
		return err
	}
	return fileops.Error(op, res, fileOpTimeout)
}

// ListFiles lists dir, recursively if asked, leaving out the contents of
// .git directories.
func (s *Sandbox) ListFiles(ctx context.Context, dir string, recursive bool) ([]sandbox.FileInfo, error) {
	abs, err := fileops.Resolve(dir)
	if err != nil {
		return nil, err
	}
	if files, err, ok := channel.File(ctx, s.link(), s.usable, fileOpTimeout, func(ctx context.Context, c *channel.Client) ([]sandbox.FileInfo, error) {
		return c.ListFiles(ctx, abs, recursive)
	}); ok {
		return files, err
	}
	op := fileops.ListOp(dir, abs, recursive)
	res, err := s.runFile(ctx, op)
	if err != nil {
		return nil, err
	}
	return fileops.Listing(op, abs, res, fileOpTimeout)
}

// runFile runs the file helper in one exec of its own: its stdin carries
// the data of a write, its stdout the data of a read. The host bounds it
// with fileOpTimeout and, when that passes or ctx ends, kills every
// process of the helper before returning.
func (s *Sandbox) runFile(ctx context.Context, op fileops.Op) (fileops.Result, error) {
	if err := s.usable(); err != nil {
		return fileops.Result{}, err
	}
	mark := cmdwrap.NewMark()
	stdout := &fileops.LimitedBuffer{Max: op.Max}
	stderr := &fileops.LimitedBuffer{Max: 4 << 10}
	var stdin io.Reader
	if op.Stdin != nil {
		stdin = bytes.NewReader(op.Stdin)
	}
	streamCtx, cancel := context.WithTimeout(context.WithoutCancel(ctx), fileOpTimeout)
	defer cancel()
	type result struct {
		code int
		err  error
	}
	done := make(chan result, 1)
	// The mark lets kill find the helper and whatever it started.
	argv := s.command(sandbox.Workdir, []string{"RUNNER_EXEC=" + mark}, op.Command()...)
	go func() {
		code, err := s.stream(streamCtx, argv, stdin, stdout, stderr)
		done <- result{code, err}
	}()
	var r result
	select {
	case r = <-done:
	case <-ctx.Done():
		cancel()
		<-done
		s.kill(ctx, mark)
		return fileops.Result{}, fmt.Errorf("%s %s: %w", op.Name, op.Path, ctx.Err())
	}
	if r.err != nil && streamCtx.Err() != nil {
		s.kill(ctx, mark)
		return fileops.Result{TimedOut: true}, nil
	}
	if r.err != nil {
		return fileops.Result{}, s.execError(ctx, op.Name+" "+op.Path, r.err)
	}
	return fileops.Result{Code: r.code, Stdout: stdout.Buf.Bytes(), Over: stdout.Over, Stderr: stderr.Buf.String()}, nil
}
