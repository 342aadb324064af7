package docker_test

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"os/signal"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/runner-dev/runner/internal/dockertest"
	"github.com/runner-dev/runner/sandbox"
	"github.com/runner-dev/runner/sandbox/docker"
)

// runHelper is the body of a child test process that opens a sandbox the
// way the runner does (Close deferred, signals cancelling the context) and
// then is interrupted or panics.
func runHelper(mode string) int {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	e, err := docker.Connect(ctx)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	sb, err := e.StartContainer(ctx, sandbox.Config{
		Image: os.Getenv("SANDBOX_TEST_IMAGE"), RunID: os.Getenv("SANDBOX_TEST_RUN"), TaskID: mode,
	})
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	defer sb.Close(ctx)
	fmt.Println(sb.ID())
	switch mode {
	case "panic":
		panic("a bug with a sandbox open")
	default:
		_, err := sb.Exec(ctx, "sleep 600", sandbox.ExecOptions{Timeout: 10 * time.Minute})
		fmt.Fprintln(os.Stderr, "exec ended:", err)
		return 3
	}
}

// startHelper starts this test binary as a runHelper child in mode, and
// returns it with the id of the sandbox it opened and its stderr so far.
// The child is killed at the end of the test.
func startHelper(t *testing.T, mode, image, run string) (*exec.Cmd, string, *strings.Builder) {
	t.Helper()
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), "SANDBOX_TEST_HELPER="+mode, "SANDBOX_TEST_IMAGE="+image, "SANDBOX_TEST_RUN="+run)
	stderr := &strings.Builder{}
	cmd.Stderr = stderr
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cmd.Process.Kill() })
	id, err := bufio.NewReader(out).ReadString('\n')
	if err != nil {
		cmd.Wait()
		t.Fatalf("helper printed no container id: %v\n%s", err, stderr.String())
	}
	return cmd, strings.TrimSpace(id), stderr
}

func TestCloseOnSignalAndPanic(t *testing.T) {
	image := dockertest.Busybox(t)
	for _, tc := range []struct {
		name, mode string
		sig        os.Signal
	}{
		{"SIGINT", "signal", os.Interrupt},
		{"SIGTERM", "signal", syscall.SIGTERM},
		{"panic", "panic", nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cmd, id, stderr := startHelper(t, tc.mode, image, dockertest.RunID+"-"+tc.name)
			if tc.sig != nil {
				// Signalled while its command runs.
				waitFor(t, 30*time.Second, func() bool { return sleepers(t, id, "sleep 600 ") != "" })
				cmd.Process.Signal(tc.sig)
			}
			waited := make(chan error, 1)
			go func() { waited <- cmd.Wait() }()
			var err error
			select {
			case err = <-waited:
			case <-time.After(time.Minute):
				t.Fatalf("helper did not exit within a minute of %s\n%s", tc.name, stderr.String())
			}
			var exit *exec.ExitError
			if !errors.As(err, &exit) {
				t.Errorf("helper exited with %v, want a non-zero exit", err)
			}
			if out, err := dockerCLI(t, "inspect", "--format", "{{.State.Status}}", id); err == nil {
				t.Errorf("container %s still exists after %s (state %s)\nhelper stderr:\n%s", id, tc.name, out, stderr.String())
			}
		})
	}
}

// A runner killed outright (no Close, no cancelled context) in the middle
// of a command: the engine closes the command's stdin, on which its
// watchdog waits, and the command ends with it. The sandbox itself stays,
// for the next run's cleanup.
func TestExecEndsWhenRunnerDies(t *testing.T) {
	cmd, id, _ := startHelper(t, "sigkill", dockertest.Busybox(t), dockertest.RunID+"-sigkill")
	t.Cleanup(func() { dockerCLI(t, "rm", "-f", "-v", id) })
	waitFor(t, 30*time.Second, func() bool { return sleepers(t, id, "sleep 600 ") != "" })
	if err := cmd.Process.Kill(); err != nil {
		t.Fatal(err)
	}
	cmd.Wait()
	deadline := time.Now().Add(15 * time.Second)
	for left := sleepers(t, id, "sleep 600 "); left != ""; left = sleepers(t, id, "sleep 600 ") {
		if time.Now().After(deadline) {
			t.Fatalf("the command outlived its runner by 15s:\n%s", left)
		}
		time.Sleep(200 * time.Millisecond)
	}
	if state, err := dockerCLI(t, "inspect", "--format", "{{.State.Status}}", id); err != nil || state != "running" {
		t.Errorf("sandbox state %q (%v) after the runner died, want it still running", state, err)
	}
}

func TestCloseIsIdempotentAndRemoves(t *testing.T) {
	sb := start(t, sandbox.Config{})
	cancelled, cancel := context.WithCancel(context.Background())
	cancel()
	for i := 0; i < 2; i++ {
		if err := sb.Close(cancelled); err != nil {
			t.Fatalf("Close #%d with a cancelled context: %v", i+1, err)
		}
	}
	if out, err := dockerCLI(t, "inspect", sb.ID()); err == nil {
		t.Fatalf("container still exists after Close:\n%s", out)
	}
	if _, err := sb.Exec(context.Background(), "true", sandbox.ExecOptions{}); !errors.Is(err, sandbox.ErrClosed) {
		t.Errorf("Exec after Close: %v, want ErrClosed", err)
	}
}

func TestStartFailureLeavesNothing(t *testing.T) {
	e := dockertest.Engine(t)
	run := dockertest.RunID + "-startfail"
	_, err := e.StartContainer(context.Background(), sandbox.Config{
		Image: dockertest.Busybox(t), RunID: run, Workspace: "/nonexistent/workspace",
	})
	if err == nil || !strings.Contains(err.Error(), "/nonexistent/workspace") {
		t.Fatalf("Start with a missing workspace: %v, want an error naming it", err)
	}
	list, err := e.List(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	for _, l := range list {
		if l.Run == run {
			t.Errorf("container %s (%s) left behind by a failed Start", l.Name, l.State)
		}
	}
}
