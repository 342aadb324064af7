package fileops

import (
	"context"
	"fmt"
	"path"
	"strings"
	"time"

	"github.com/runner-dev/runner/sandbox"
)

// CACertsCommand is the argv that writes sandbox.CABundle, run as root with
// the extra certificates (PEM) on stdin: the image's system bundle, if it
// has one, then the certificates. A directory or link already at that
// place (an image's /tmp when the disk limit is off) is replaced.
func CACertsCommand() []string {
	script := `set -e; umask 022; d="$1"; f="$2"; shift 2
rm -rf "$d"; mkdir -m 0755 "$d"
` + caImageBundle + `
cat >> "$f.new"; mv "$f.new" "$f"`
	return append([]string{"sh", "-c", script, "runner-ca", path.Dir(sandbox.CABundle), sandbox.CABundle}, sandbox.ImageCABundles...)
}

// caImageBundle copies the first system bundle of "$@" to "$f.new".
const caImageBundle = `for b in "$@"; do if [ -f "$b" ] && [ -r "$b" ]; then cat "$b"; echo; break; fi; done > "$f.new"`

// CACertsEnv is the variable that carries the certificates to
// CACertsFileScript.
const CACertsEnv = "RUNNER_CA_CERTS"

// CACertsFileScript, run as sh -c CACertsFileScript runner-ca FILE
// ImageCABundles..., writes FILE as CACertsCommand writes the bundle,
// with the certificates taken from $RUNNER_CA_CERTS: for a backend that
// prepares the bundle in a volume of its own before the sandbox starts.
const CACertsFileScript = `set -e; umask 022; f="$1"; shift
` + caImageBundle + `
printf '%s\n' "$` + CACertsEnv + `" >> "$f.new"; mv "$f.new" "$f"`

// CheckpointDir holds a sandbox's checkpoint of the workspace: outside the
// workspace, and a dot name, which `rm -rf /tmp/*` leaves alone.
const CheckpointDir = "/tmp/.runner-checkpoint"

// NoCheckpointExit is the exit code of RestoreScript when there is no
// checkpoint.
const NoCheckpointExit = 3

// CheckpointScript and RestoreScript, run as commands of the sandbox user,
// save the workspace to CheckpointDir and put it back, with cp -a.
// Directories are made writable first so that removal cannot be refused by
// a mode a command set; files the sandbox user cannot read make the
// checkpoint fail.
const (
	CheckpointScript = `set -e
s=` + CheckpointDir + `
if [ -e "$s" ]; then find "$s" -type d -exec chmod u+rwx {} +; rm -rf "$s"; fi
mkdir -p "$s"
cp -a ` + sandbox.Workdir + `/. "$s"/`
	RestoreScript = `s=` + CheckpointDir + `
[ -d "$s" ] || { echo "no checkpoint at $s" >&2; exit 3; }
set -e
cd ` + sandbox.Workdir + `
find . -type d -exec chmod u+rwx {} +
rm -rf ./* ./.[!.]* ./..?*
cp -a "$s"/. ./
find "$s" -type d -exec chmod u+rwx {} +
rm -rf "$s"`
)

// ScriptFailure describes a script's run that did not succeed.
func ScriptFailure(res sandbox.ExecResult) string {
	why := fmt.Sprintf("exit %d", res.ExitCode)
	if res.TimedOut {
		why = "timed out"
	}
	if out := strings.TrimSpace(res.Output); out != "" {
		why += ": " + out
	}
	return why
}

// Execer runs a command in a sandbox, as sandbox.Sandbox's Exec does.
type Execer interface {
	Exec(ctx context.Context, cmd string, opt sandbox.ExecOptions) (sandbox.ExecResult, error)
}

// CheckpointTimeout bounds one copy of the workspace by Checkpoint or
// Restore.
const CheckpointTimeout = 10 * time.Minute

// Checkpoint copies sb's workspace to CheckpointDir inside the sandbox,
// with CheckpointScript: sandbox.Checkpointer's Checkpoint for every
// backend that runs commands.
func Checkpoint(ctx context.Context, sb Execer) error {
	res, err := sb.Exec(ctx, CheckpointScript, sandbox.ExecOptions{Timeout: CheckpointTimeout, MaxOutput: 4 << 10})
	if err != nil {
		return fmt.Errorf("checkpoint workspace: %w", err)
	}
	if res.ExitCode != 0 || res.TimedOut {
		return fmt.Errorf("checkpoint workspace: %s", ScriptFailure(res))
	}
	return nil
}

// Restore copies the checkpoint back over sb's workspace, with
// RestoreScript: sandbox.Checkpointer's Restore for every backend that
// runs commands.
func Restore(ctx context.Context, sb Execer) error {
	res, err := sb.Exec(ctx, RestoreScript, sandbox.ExecOptions{Timeout: CheckpointTimeout, MaxOutput: 4 << 10})
	if err != nil {
		return fmt.Errorf("restore workspace: %w", err)
	}
	if res.ExitCode == NoCheckpointExit {
		return sandbox.ErrNoCheckpoint
	}
	if res.ExitCode != 0 || res.TimedOut {
		return fmt.Errorf("restore workspace: %s", ScriptFailure(res))
	}
	return nil
}
