package sandbox

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"
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

// checkpointDir holds the Docker backend's checkpoint: outside the
// workspace, and a dot name, which `rm -rf /tmp/*` leaves alone.
const checkpointDir = "/tmp/.runner-checkpoint"

// checkpointTimeout bounds one copy of the workspace.
const checkpointTimeout = 10 * time.Minute

// noCheckpointExit is the exit code of the restore script when there is no
// checkpoint.
const noCheckpointExit = 3

// The scripts copy with cp -a as the sandbox user. Directories are made
// writable first so that removal cannot be refused by a mode a command
// set; files the sandbox user cannot read make Checkpoint fail.
const (
	checkpointScript = `set -e
s=` + checkpointDir + `
if [ -e "$s" ]; then find "$s" -type d -exec chmod u+rwx {} +; rm -rf "$s"; fi
mkdir -p "$s"
cp -a ` + Workdir + `/. "$s"/`
	restoreScript = `s=` + checkpointDir + `
[ -d "$s" ] || { echo "no checkpoint at $s" >&2; exit 3; }
set -e
cd ` + Workdir + `
find . -type d -exec chmod u+rwx {} +
rm -rf ./* ./.[!.]* ./..?*
cp -a "$s"/. ./
find "$s" -type d -exec chmod u+rwx {} +
rm -rf "$s"`
)

var _ Checkpointer = (*Docker)(nil)

// Checkpoint copies the workspace to checkpointDir inside the sandbox.
// See Checkpointer.
func (d *Docker) Checkpoint(ctx context.Context) error {
	res, err := d.Exec(ctx, checkpointScript, ExecOptions{Timeout: checkpointTimeout, MaxOutput: 4 << 10})
	if err != nil {
		return fmt.Errorf("checkpoint workspace: %w", err)
	}
	if res.ExitCode != 0 || res.TimedOut {
		return fmt.Errorf("checkpoint workspace: %s", scriptFailure(res))
	}
	return nil
}

// Restore copies checkpointDir back over the workspace. See Checkpointer.
func (d *Docker) Restore(ctx context.Context) error {
	res, err := d.Exec(ctx, restoreScript, ExecOptions{Timeout: checkpointTimeout, MaxOutput: 4 << 10})
	if err != nil {
		return fmt.Errorf("restore workspace: %w", err)
	}
	if res.ExitCode == noCheckpointExit {
		return ErrNoCheckpoint
	}
	if res.ExitCode != 0 || res.TimedOut {
		return fmt.Errorf("restore workspace: %s", scriptFailure(res))
	}
	return nil
}

func scriptFailure(res ExecResult) string {
	why := fmt.Sprintf("exit %d", res.ExitCode)
	if res.TimedOut {
		why = "timed out"
	}
	if out := strings.TrimSpace(res.Output); out != "" {
		why += ": " + out
	}
	return why
}
