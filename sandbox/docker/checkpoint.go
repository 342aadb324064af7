package docker

import (
	"context"

	"github.com/runner-dev/runner/sandbox"
	"github.com/runner-dev/runner/sandbox/fileops"
)

var _ sandbox.Checkpointer = (*Sandbox)(nil)

// Checkpoint copies the workspace to fileops.CheckpointDir inside the
// sandbox. See Checkpointer.
func (d *Sandbox) Checkpoint(ctx context.Context) error { return fileops.Checkpoint(ctx, d) }

// Restore copies the checkpoint back over the workspace. See Checkpointer.
func (d *Sandbox) Restore(ctx context.Context) error { return fileops.Restore(ctx, d) }
