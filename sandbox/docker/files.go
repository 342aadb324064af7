package docker

import (
	"context"
	"fmt"
	"io/fs"

	"github.com/runner-dev/runner/sandbox"
	"github.com/runner-dev/runner/sandbox/channel"
	"github.com/runner-dev/runner/sandbox/fileops"
)

// ReadFile returns the content of a regular file in the workspace. The file
// is opened and read by one process running as the sandbox user, which
// checks the file it opened (see fileops.Script), never a path that could change
// between a check and a use.
func (d *Sandbox) ReadFile(ctx context.Context, p string) ([]byte, error) {
	abs, err := resolve(p)
	if err != nil {
		return nil, err
	}
	if data, err, ok := channel.File(ctx, d.link(), d.usable, fileOpTimeout, func(ctx context.Context, c *channel.Client) ([]byte, error) { return c.ReadFile(ctx, abs) }); ok {
		return data, err
	}
	op := fileops.ReadOp(p, abs)
	res, err := d.runFile(ctx, op)
	if err != nil {
		return nil, err
	}
	return fileops.ReadData(op, res, fileOpTimeout)
}

// WriteFile writes data to a file in the workspace, creating its parents.
// The data travels on the stdin of one process running as the sandbox
// user, which creates or opens the file, checks the file it opened, and
// only then truncates and writes it (see fileops.Script).
func (d *Sandbox) WriteFile(ctx context.Context, p string, data []byte, mode fs.FileMode) error {
	abs, err := resolve(p)
	if err != nil {
		return err
	}
	if abs == sandbox.Workdir {
		return fmt.Errorf("write %s: %w", p, sandbox.ErrIsDir)
	}
	if _, err, ok := channel.File(ctx, d.link(), d.usable, fileOpTimeout, func(ctx context.Context, c *channel.Client) (struct{}, error) {
		return struct{}{}, c.WriteFile(ctx, abs, data, mode)
	}); ok {
		return err
	}
	op := fileops.WriteOp(p, abs, data, mode)
	res, err := d.runFile(ctx, op)
	if err != nil {
		return err
	}
	return fileError(op, res)
}

// ListFiles lists dir, recursively if asked, leaving out the contents of
// .git directories.
func (d *Sandbox) ListFiles(ctx context.Context, dir string, recursive bool) ([]sandbox.FileInfo, error) {
	abs, err := resolve(dir)
	if err != nil {
		return nil, err
	}
	if files, err, ok := channel.File(ctx, d.link(), d.usable, fileOpTimeout, func(ctx context.Context, c *channel.Client) ([]sandbox.FileInfo, error) {
		return c.ListFiles(ctx, abs, recursive)
	}); ok {
		return files, err
	}
	op := fileops.ListOp(dir, abs, recursive)
	res, err := d.runFile(ctx, op)
	if err != nil {
		return nil, err
	}
	return fileops.Listing(op, abs, res, fileOpTimeout)
}

// resolve turns a workspace-relative (or absolute, inside Workdir) path
// into an absolute one, refusing any that leaves Workdir.
func resolve(p string) (string, error) { return fileops.Resolve(p) }
