package docker

import (
	"context"
	"fmt"
	"io"
	"log/slog"

	"github.com/moby/moby/client"

	"github.com/runner-dev/runner/sandbox"
)

// Snapshot freezes the sandbox and returns the workspace as a tar stream.
// See Sandbox.Snapshot for the contract.
//
// Through the channel, the helper freezes the sandbox itself (it stops
// every other process, for good) and streams the tar: no engine call.
// Otherwise, or when the helper cannot (a process that will not stop, an
// entry of another user it cannot read), the container is paused and the
// workspace copied out through the archive API, as root.
func (d *Sandbox) Snapshot(ctx context.Context) (io.ReadCloser, error) {
	d.mu.Lock()
	closed, paused := d.closed, d.paused
	d.mu.Unlock()
	if closed {
		return nil, sandbox.ErrClosed
	}
	if !paused {
		if c := d.link().Client(); c != nil {
			rc, err := c.Snapshot(ctx)
			if err == nil {
				d.mu.Lock()
				d.stopped = true
				d.mu.Unlock()
				return rc, nil
			}
			slog.Info("sandbox snapshot: the helper could not take it; pausing the sandbox to copy it out", "sandbox", d.name, "cause", err.Error())
		}
		// A running container could swap a symlink under the copy: freeze
		// it first. It is paused, not stopped, because stopping it would
		// unmount the memory-backed workspace and lose it.
		if _, err := d.e.cli.ContainerPause(ctx, d.id, client.ContainerPauseOptions{}); err != nil {
			return nil, d.e.explain("pause sandbox for snapshot", "", err)
		}
	}
	d.mu.Lock()
	d.stopped, d.paused = true, true
	d.mu.Unlock()
	res, err := d.e.cli.CopyFromContainer(ctx, d.id, client.CopyFromContainerOptions{SourcePath: sandbox.Workdir + "/."})
	if err != nil {
		return nil, fmt.Errorf("snapshot: %w", d.e.explain("copy workspace out", "", err))
	}
	return res.Content, nil
}
