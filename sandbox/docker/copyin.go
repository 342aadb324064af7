package docker

import (
	"context"
	"fmt"
	"io"
	"strings"

	"github.com/moby/moby/client"

	"github.com/runner-dev/runner/internal/panics"

	"github.com/runner-dev/runner/sandbox"
	"github.com/runner-dev/runner/sandbox/fileops"
)

// copyIn copies the host directory dir into Workdir, owned by the sandbox
// user (and, without a disk limit, creates the user's home).
// The tree travels as a tar stream through the Engine API, so the engine may
// be remote.
func (d *Sandbox) copyIn(ctx context.Context, dir string) error {
	// Into the memory-backed workspace itself (the home is a mount of its
	// own), or into the writable layer, with the home, from the root.
	dest, layout := sandbox.Workdir, fileops.TarLayout{}
	if d.cfg.Disk < 0 {
		dest, layout = "/", fileops.TarLayout{Root: strings.TrimPrefix(sandbox.Workdir, "/"), Home: strings.TrimPrefix(sandbox.HomeDir, "/")}
	}
	pr, pw := io.Pipe()
	go func() {
		var err error
		defer func() { pw.CloseWithError(err) }()
		defer panics.Catch(ctx, &err)
		err = fileops.WriteWorkspaceTar(pw, dir, sandbox.UID, sandbox.GID, layout)
	}()
	defer pr.Close()
	_, err := d.e.cli.CopyToContainer(ctx, d.id, client.CopyToContainerOptions{
		DestinationPath: dest,
		Content:         pr,
	})
	if err != nil {
		err = d.e.explain("copy workspace into sandbox", "", err)
		if d.cfg.Disk > 0 && strings.Contains(err.Error(), "no space left on device") {
			err = fmt.Errorf("%w (the workspace does not fit in the sandbox's disk limit of %d MiB: raise limits.disk, or set it to off)", err, d.cfg.Disk>>20)
		}
		return err
	}
	return nil
}
