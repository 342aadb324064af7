package sandbox

import (
	"context"
	"errors"
)

// Checkpointer is a Sandbox that can set its workspace aside and put it
// back, so that a command (the task's check) may run against the
// workspace without leaving anything in it.
type Checkpointer interface {
	// Checkpoint saves the workspace as it is now, replacing any earlier
	// checkpoint. On error nothing was changed in the workspace.
	Checkpoint(ctx context.Context) error
	// Restore puts the workspace back as the last Checkpoint saved it:
	// what was added since is removed, what was changed or removed is
	// back, modes included; then the checkpoint is dropped. It fails with
	// ErrNoCheckpoint, the workspace untouched, when there is none (or it
	// was destroyed meanwhile); any other error may leave the workspace
	// partly restored. A process still running may write again after it.
	Restore(ctx context.Context) error
}

// ErrNoCheckpoint is returned by Restore when there is no checkpoint.
var ErrNoCheckpoint = errors.New("no checkpoint of the workspace")
