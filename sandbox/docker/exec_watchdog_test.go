package docker_test

import (
	"strings"
	"testing"
	"time"

	"github.com/runner-dev/runner/sandbox"
)

// A command that ends at once races its own watchdog being set up. Whoever
// wins, the output holds nothing but the command's own, the result is not
// marked detached, and the watchdog leaves no process behind for long.
func TestExecWatchdogLeavesNothingBehind(t *testing.T) {
	sb := start(t, sandbox.Config{})
	for i := range 50 {
		res := run(t, sb, "true", sandbox.ExecOptions{})
		if res.ExitCode != 0 || res.Output != "" || res.Detached || res.TimedOut {
			t.Fatalf("run %d: got %+v, want exit 0, no output, not detached", i+1, res)
		}
	}
	// A sleep that a watchdog leaves behind ends within a second: wait for
	// only the sandbox's own to be left, a little longer than that. The
	// processes are listed by the docker CLI, so that no watchdog of ours
	// runs while they are.
	var sleeps []string
	deadline := time.Now().Add(5 * time.Second)
	for {
		ps, err := dockerCLI(t, "exec", sb.ID(), "ps", "-o", "args")
		if err != nil {
			t.Fatalf("docker exec ps: %v: %s", err, ps)
		}
		sleeps = sleeps[:0]
		for line := range strings.SplitSeq(ps, "\n") {
			if strings.HasPrefix(line, "sleep ") {
				sleeps = append(sleeps, line)
			}
		}
		if len(sleeps) == 1 || time.Now().After(deadline) {
			break
		}
	}
	if len(sleeps) != 1 {
		t.Errorf("got sleep processes %q 5s after the last command, want only the sandbox's own", sleeps)
	}
}
