package sandbox

import (
	"context"
	"fmt"
	"io"

	"github.com/moby/moby/client"
)

// Snapshot stops the container and returns the workspace as a tar stream.
// See Sandbox.Snapshot for the contract.
func (d *Docker) Snapshot(ctx context.Context) (io.ReadCloser, error) {
	d.mu.Lock()
	closed := d.closed
	d.mu.Unlock()
	if closed {
		return nil, ErrClosed
	}
	// A running container could swap a symlink under the copy: stop it
	// first. The stop signal is SIGKILL, so this does not wait.
	if _, err := d.e.cli.ContainerStop(ctx, d.id, client.ContainerStopOptions{}); err != nil {
		return nil, d.e.explain("stop sandbox for snapshot", "", err)
	}
	d.mu.Lock()
	d.stopped = true
	d.mu.Unlock()
	res, err := d.e.cli.CopyFromContainer(ctx, d.id, client.CopyFromContainerOptions{SourcePath: Workdir + "/."})
	if err != nil {
		return nil, fmt.Errorf("snapshot: %w", d.e.explain("copy workspace out", "", err))
	}
	return res.Content, nil
}
