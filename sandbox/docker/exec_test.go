package docker_test

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/runner-dev/runner/internal/dockertest"
	"github.com/runner-dev/runner/sandbox"
)

// A command that outlives its timeout is killed with everything it started,
// including processes that ignore SIGTERM, start a session of their own or
// clear their environment: with Debian's dash and util-linux (the
// conformance suite tries busybox's shell, under every runtime).
func TestExecTimeoutKillsEveryProcess(t *testing.T) {
	for _, img := range []struct {
		name  string
		image func(testing.TB) string
	}{{"debian", dockertest.SandboxImage}} {
		t.Run(img.name, func(t *testing.T) {
			sb := start(t, sandbox.Config{Image: img.image(t)})
			cmd := `trap '' TERM
(trap '' TERM; exec sleep 1001) &
setsid sh -c 'trap "" TERM; exec sleep 1002' &
env -i /bin/sh -c 'trap "" TERM; exec sleep 1003' &
sleep 1004 >/dev/null 2>&1 &
echo started
exec sleep 1000`
			begin := time.Now()
			res := run(t, sb, cmd, sandbox.ExecOptions{Timeout: 2 * time.Second})
			took := time.Since(begin)
			if !res.TimedOut {
				t.Errorf("TimedOut = false, want true (exit %d, output %q)", res.ExitCode, res.Output)
			}
			if res.Stdout != "started\n" {
				t.Errorf("stdout = %q, want the output before the timeout", res.Stdout)
			}
			if strings.Contains(res.Output, "runner-exec-") {
				t.Errorf("the watchdog's mark leaked into the output: %q", res.Output)
			}
			if took > 15*time.Second {
				t.Errorf("Exec took %s for a 2s timeout", took)
			}
			if left := sleepers(t, sb.ID(), "sleep 100"); left != "" {
				t.Errorf("processes survived the timeout:\n%s", left)
			}
		})
	}
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
