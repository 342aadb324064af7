package bench

import (
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"strings"
	"testing"

	"github.com/runner-dev/runner/sandbox"
)

// baselineLabel marks the containers the baselines start, so that they can
// be found and removed; its value is this process's id.
const baselineLabel = "dev.runner.bench.baseline"

// baselineRun is the `docker run -d` of a user's script: the limits and
// mounts of a runner sandbox with its default settings (a read-only root,
// memory-backed /tmp, /var/tmp, home and workspace of 4 GiB each), so that
// the engine does the same work, run as the image's user, which is root, so
// that `docker cp` needs no ownership options.
func baselineRun(image string) []string {
	return []string{"run", "-d", "--init", "--network", "none", "--cap-drop", "ALL",
		"--security-opt", "no-new-privileges", "--memory", "4g", "--memory-swap", "4g", "--cpus", "1",
		"--pids-limit", "512", "--ulimit", "nofile=4096:4096", "--log-opt", "max-size=1m", "--log-opt", "max-file=1",
		"--read-only",
		"--tmpfs", "/tmp:rw,nosuid,nodev,size=4g,mode=1777",
		"--tmpfs", "/var/tmp:rw,nosuid,nodev,size=4g,mode=1777",
		"--tmpfs", "/home/sandbox:rw,nosuid,nodev,size=4g,mode=0700",
		"--mount", `type=volume,dst=` + sandbox.Workdir + `,volume-opt=type=tmpfs,volume-opt=device=tmpfs,"volume-opt=o=size=4g,mode=0755"`,
		"--label", fmt.Sprintf("%s=%d", baselineLabel, os.Getpid()), "-w", sandbox.Workdir,
		"--entrypoint", "sleep", image, "7200"}
}

// dockerCmd runs the docker CLI and returns its trimmed standard output.
func dockerCmd(args ...string) (string, error) {
	cmd := exec.Command("docker", args...)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		return "", fmt.Errorf("docker %s: %w: %s", strings.Join(args, " "), err, strings.TrimSpace(stderr.String()))
	}
	return strings.TrimSpace(stdout.String()), nil
}

// mustDocker is dockerCmd that ends the benchmark on failure.
func mustDocker(tb testing.TB, args ...string) string {
	tb.Helper()
	out, err := dockerCmd(args...)
	if err != nil {
		tb.Fatal(err)
	}
	return out
}

// removeBaselineContainers removes what the baselines of this process
// started and returns how many were still there.
func removeBaselineContainers(tb testing.TB) int {
	tb.Helper()
	ids := strings.Fields(mustDocker(tb, "ps", "-aq", "--filter", fmt.Sprintf("label=%s=%d", baselineLabel, os.Getpid())))
	if len(ids) > 0 {
		mustDocker(tb, append([]string{"rm", "-f", "-v"}, ids...)...)
	}
	return len(ids)
}

// cleanBaselines removes the baselines' containers when the benchmark ends.
func cleanBaselines(tb testing.TB) {
	tb.Cleanup(func() { removeBaselineContainers(tb) })
}
