package docker

import (
	"context"
	"fmt"
	"io"

	"github.com/moby/moby/client"

	"github.com/runner-dev/runner/sandbox"
)

// Snapshot stops the container and returns the workspace as a tar stream.
// See Sandbox.Snapshot for the contract.
func (d *Sandbox) Snapshot(ctx context.Context) (io.ReadCloser, error) {
	d.mu.Lock()
	closed := d.closed
	d.mu.Unlock()
	if closed {
		return nil, sandbox.ErrClosed
	}
	// A running container could swap a symlink under the copy: freeze it
	// first. It is paused, not stopped, because stopping it would unmount
	// the memory-backed workspace and lose it.
	d.mu.Lock()
	paused := d.stopped
	d.mu.Unlock()
	if !paused {
		if _, err := d.e.cli.ContainerPause(ctx, d.id, client.ContainerPauseOptions{}); err != nil {
			return nil, d.e.explain("pause sandbox for snapshot", "", err)
		}
	}
	d.mu.Lock()
	d.stopped = true
	d.mu.Unlock()
	res, err := d.e.cli.CopyFromContainer(ctx, d.id, client.CopyFromContainerOptions{SourcePath: sandbox.Workdir + "/."})
	if err != nil {
		return nil, fmt.Errorf("snapshot: %w", d.e.explain("copy workspace out", "", err))
	}
	return res.Content, nil
}
