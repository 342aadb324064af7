package docker

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/runner-dev/runner/sandbox"
)

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
cp -a ` + sandbox.Workdir + `/. "$s"/`
	restoreScript = `s=` + checkpointDir + `
[ -d "$s" ] || { echo "no checkpoint at $s" >&2; exit 3; }
set -e
cd ` + sandbox.Workdir + `
find . -type d -exec chmod u+rwx {} +
rm -rf ./* ./.[!.]* ./..?*
cp -a "$s"/. ./
find "$s" -type d -exec chmod u+rwx {} +
rm -rf "$s"`
)

var _ sandbox.Checkpointer = (*Sandbox)(nil)

// Checkpoint copies the workspace to checkpointDir inside the sandbox.
// See Checkpointer.
func (d *Sandbox) Checkpoint(ctx context.Context) error {
	res, err := d.Exec(ctx, checkpointScript, sandbox.ExecOptions{Timeout: checkpointTimeout, MaxOutput: 4 << 10})
	if err != nil {
		return fmt.Errorf("checkpoint workspace: %w", err)
	}
	if res.ExitCode != 0 || res.TimedOut {
		return fmt.Errorf("checkpoint workspace: %s", scriptFailure(res))
	}
	return nil
}

// Restore copies checkpointDir back over the workspace. See Checkpointer.
func (d *Sandbox) Restore(ctx context.Context) error {
	res, err := d.Exec(ctx, restoreScript, sandbox.ExecOptions{Timeout: checkpointTimeout, MaxOutput: 4 << 10})
	if err != nil {
		return fmt.Errorf("restore workspace: %w", err)
	}
	if res.ExitCode == noCheckpointExit {
		return sandbox.ErrNoCheckpoint
	}
	if res.ExitCode != 0 || res.TimedOut {
		return fmt.Errorf("restore workspace: %s", scriptFailure(res))
	}
	return nil
}

func scriptFailure(res sandbox.ExecResult) string {
	why := fmt.Sprintf("exit %d", res.ExitCode)
	if res.TimedOut {
		why = "timed out"
	}
	if out := strings.TrimSpace(res.Output); out != "" {
		why += ": " + out
	}
	return why
}
