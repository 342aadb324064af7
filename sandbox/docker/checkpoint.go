package docker

import (
	"context"
	"fmt"
	"time"

	"github.com/runner-dev/runner/sandbox"
	"github.com/runner-dev/runner/sandbox/fileops"
)

// checkpointTimeout bounds one copy of the workspace.
const checkpointTimeout = 10 * time.Minute

var _ sandbox.Checkpointer = (*Sandbox)(nil)

// Checkpoint copies the workspace to fileops.CheckpointDir inside the
// sandbox. See Checkpointer.
func (d *Sandbox) Checkpoint(ctx context.Context) error {
	res, err := d.Exec(ctx, fileops.CheckpointScript, sandbox.ExecOptions{Timeout: checkpointTimeout, MaxOutput: 4 << 10})
	if err != nil {
		return fmt.Errorf("checkpoint workspace: %w", err)
	}
	if res.ExitCode != 0 || res.TimedOut {
		return fmt.Errorf("checkpoint workspace: %s", fileops.ScriptFailure(res))
	}
	return nil
}

// Restore copies the checkpoint back over the workspace. See Checkpointer.
func (d *Sandbox) Restore(ctx context.Context) error {
	res, err := d.Exec(ctx, fileops.RestoreScript, sandbox.ExecOptions{Timeout: checkpointTimeout, MaxOutput: 4 << 10})
	if err != nil {
		return fmt.Errorf("restore workspace: %w", err)
	}
	if res.ExitCode == fileops.NoCheckpointExit {
		return sandbox.ErrNoCheckpoint
	}
	if res.ExitCode != 0 || res.TimedOut {
		return fmt.Errorf("restore workspace: %s", fileops.ScriptFailure(res))
	}
	return nil
}
