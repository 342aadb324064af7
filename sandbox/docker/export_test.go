package docker

import (
	"context"
	"fmt"
	"io"
	"time"

	"github.com/moby/moby/client"
)

// BareExec runs cmd in the sandbox with the fewest engine calls a command
// needs and nothing else: no wrapper, timeout, output capture or checks.
// ExecCreate, ExecAttach, the output read to its end, ExecInspect. It is the
// floor against which the benchmarks measure Exec.
func (d *Sandbox) BareExec(ctx context.Context, cmd ...string) (exitCode int, err error) {
	created, err := d.e.cli.ExecCreate(ctx, d.id, client.ExecCreateOptions{
		User: user, AttachStdout: true, AttachStderr: true, Cmd: cmd,
	})
	if err != nil {
		return 0, fmt.Errorf("exec create: %w", err)
	}
	att, err := d.e.cli.ExecAttach(ctx, created.ID, client.ExecAttachOptions{})
	if err != nil {
		return 0, fmt.Errorf("exec attach: %w", err)
	}
	defer att.Close()
	if _, err := io.Copy(io.Discard, att.Reader); err != nil {
		return 0, fmt.Errorf("exec read: %w", err)
	}
	ins, err := d.e.cli.ExecInspect(ctx, created.ID, client.ExecInspectOptions{})
	if err != nil {
		return 0, fmt.Errorf("exec inspect: %w", err)
	}
	if ins.Running {
		return 0, fmt.Errorf("exec inspect: %s still running after its output closed", cmd)
	}
	return ins.ExitCode, nil
}

// SetFileOpTimeout sets how long the host waits for one file operation,
// until the test ends.
func SetFileOpTimeout(t interface{ Cleanup(func()) }, d time.Duration) {
	old := fileOpTimeout
	fileOpTimeout = d
	t.Cleanup(func() { fileOpTimeout = old })
}

// ChannelPID is the process id of the sandbox's channel helper, inside the
// sandbox, or 0 when the sandbox has no live channel.
func (d *Sandbox) ChannelPID() int {
	if c := d.link().Client(); c != nil {
		return c.HelperPID()
	}
	return 0
}

// ChannelTar streams a tar of the workspace through the sandbox's channel.
func (d *Sandbox) ChannelTar(ctx context.Context) (io.ReadCloser, error) {
	c := d.link().Client()
	if c == nil {
		return nil, fmt.Errorf("no channel")
	}
	return c.Tar(ctx)
}

// HelperBound reports whether the sandbox's helper is the host's file
// mounted read-only (else it was copied in, or there is none).
func (d *Sandbox) HelperBound() bool { return d.helper == helperBound }

// CopyChannelHelper makes the engine copy the helper into its sandboxes
// through the archive API, as it does with an engine elsewhere.
func (e *Engine) CopyChannelHelper() { e.channelBind.Store(false) }

// BindsChannelHelper reports whether the engine mounts the helper into
// the next sandbox.
func (e *Engine) BindsChannelHelper() bool { return e.delivery() == helperBound }
