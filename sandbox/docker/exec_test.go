package docker_test

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/runner-dev/runner/internal/dockertest"
	"github.com/runner-dev/runner/sandbox"
	"github.com/runner-dev/runner/sandbox/sandboxtest"
)

// A command that outlives its timeout is killed with everything it started,
// with Debian's dash and util-linux too (the conformance suite tries
// busybox's shell, under every runtime).
func TestExecTimeoutKillsEveryProcess(t *testing.T) {
	e := dockertest.Engine(t)
	sandboxtest.ExecTimeoutKillsEveryProcess(t, sandboxtest.Target{Backend: e, RunID: dockertest.RunID}, dockertest.SandboxImage(t))
}

// sleepers lists the processes of a container whose command line starts
// with prefix, read from /proc through the docker CLI (the images need not
// have ps).
func sleepers(t *testing.T, id, prefix string) string {
	t.Helper()
	out, err := dockerCLI(t, "exec", id, "sh", "-c",
		`for f in /proc/[0-9]*/cmdline; do tr '\0' ' ' <"$f" 2>/dev/null; echo; done`)
	if err != nil {
		t.Fatalf("list processes: %v: %s", err, out)
	}
	var left []string
	for line := range strings.SplitSeq(out, "\n") {
		if strings.HasPrefix(line, prefix) {
			left = append(left, line)
		}
	}
	return strings.Join(left, "\n")
}

// A container killed from outside in the middle of a command: a clear
// error, quickly, not a hang.
func TestExecContainerKilledFromOutside(t *testing.T) {
	sb := start(t, sandbox.Config{})
	type result struct {
		res sandbox.ExecResult
		err error
	}
	done := make(chan result, 1)
	go func() {
		res, err := sb.Exec(context.Background(), "echo running; sleep 300", sandbox.ExecOptions{Timeout: 10 * time.Minute})
		done <- result{res, err}
	}()
	waitFor(t, 30*time.Second, func() bool { return sleepers(t, sb.ID(), "sleep 300") != "" })
	if out, err := dockerCLI(t, "kill", sb.ID()); err != nil {
		t.Fatalf("docker kill: %v: %s", err, out)
	}
	select {
	case r := <-done:
		if !errors.Is(r.err, sandbox.ErrStopped) || !strings.Contains(r.err.Error(), "killed from outside") {
			t.Errorf("Exec = %+v, %v; want an error saying the sandbox was killed from outside", r.res, r.err)
		}
	case <-time.After(30 * time.Second):
		t.Fatal("Exec still running 30s after the container was killed")
	}
	if _, err := sb.Exec(context.Background(), "true", sandbox.ExecOptions{}); !errors.Is(err, sandbox.ErrStopped) {
		t.Errorf("Exec on the killed sandbox: %v, want ErrStopped", err)
	}
}
