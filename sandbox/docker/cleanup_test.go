package docker_test

import (
	"context"
	"errors"
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/runner-dev/runner/internal/dockertest"
	"github.com/runner-dev/runner/sandbox"
	"github.com/runner-dev/runner/sandbox/docker"
)

func TestCleanupRemovesOnlyDeadRuns(t *testing.T) {
	host, _ := os.Hostname()
	dead := exec.Command("true")
	if err := dead.Run(); err != nil {
		t.Fatal(err)
	}
	live := exec.Command("sleep", "120")
	if err := live.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() { live.Process.Kill(); live.Wait() }()

	owners := map[string]sandbox.Owner{
		"dead-owner":   {Host: host, PID: dead.Process.Pid},
		"reused-pid":   {Host: host, PID: os.Getpid(), Start: "1"}, // alive pid, other start time
		"live-owner":   {Host: host, PID: live.Process.Pid},
		"other-host":   {Host: "some-other-host", PID: 1},
		"this-process": sandbox.Self(),
	}
	ids := map[string]string{}
	for task, owner := range owners {
		ids[task] = startOn(t, dockertest.Engine(t).OwnedBy(owner), sandbox.Config{TaskID: task}).ID()
	}
	expired := start(t, sandbox.Config{TaskID: "expired", Lifetime: time.Second})
	ids["expired"] = expired.ID()
	// Its PID 1 ends by itself after a second: wait for that, not a
	// fixed time.
	waitFor(t, 30*time.Second, func() bool {
		state, _ := dockerCLI(t, "inspect", "--format", "{{.State.Running}}", expired.ID())
		return state == "false"
	})
	// The deadline label has a one-second resolution: wait until the
	// clock is past what it says.
	label, err := dockerCLI(t, "inspect", "--format", `{{index .Config.Labels "`+docker.LabelDeadline+`"}}`, expired.ID())
	deadline, perr := time.Parse(time.RFC3339, label)
	if err != nil || perr != nil {
		t.Fatalf("deadline label %q: %v %v", label, err, perr)
	}
	waitFor(t, 30*time.Second, func() bool { return time.Now().After(deadline) })

	rep, err := dockertest.Engine(t).Cleanup(context.Background(), false)
	if err != nil {
		t.Fatalf("Cleanup: %v", err)
	}
	removed := map[string]string{}
	for _, l := range rep.Removed {
		removed[l.Task] = l.Why
	}
	want := map[string]string{"dead-owner": "owner dead", "reused-pid": "owner dead", "expired": "deadline passed"}
	for task, why := range want {
		if removed[task] != why {
			t.Errorf("task %s: removed for %q, want %q", task, removed[task], why)
		}
		if out, err := dockerCLI(t, "inspect", ids[task]); err == nil {
			t.Errorf("task %s: container still exists:\n%.200s", task, out)
		}
	}
	for _, task := range []string{"live-owner", "other-host", "this-process"} {
		if why, ok := removed[task]; ok {
			t.Errorf("task %s of a live run removed (%s)", task, why)
		}
		if state, err := dockerCLI(t, "inspect", "--format", "{{.State.Running}}", ids[task]); err != nil || state != "true" {
			t.Errorf("task %s: container state %q, %v; want running", task, state, err)
		}
	}
}

func waitFor(t *testing.T, limit time.Duration, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(limit)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("condition not met within %s", limit)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

func TestErrorsAUserCanActOn(t *testing.T) {
	e := dockertest.Engine(t)
	ctx := context.Background()

	_, err := e.Start(ctx, sandbox.Config{Image: "runner-sandbox-missing:latest", RunID: dockertest.RunID})
	if !errors.Is(err, sandbox.ErrImageNotFound) || !strings.Contains(err.Error(), "image runner-sandbox-missing:latest not found — pull or build it (`docker pull runner-sandbox-missing:latest`)") {
		t.Errorf("missing image: %v", err)
	}

	_, err = e.Start(ctx, sandbox.Config{Image: dockertest.Busybox(t), RunID: dockertest.RunID, CPUs: 4096})
	if !errors.Is(err, sandbox.ErrRefused) || !strings.Contains(strings.ToLower(err.Error()), "cpu") {
		t.Errorf("a setting the engine refuses: %v", err)
	}

	t.Setenv("DOCKER_HOST", "unix:///nonexistent/docker.sock")
	_, err = docker.Connect(ctx)
	if !errors.Is(err, sandbox.ErrDaemonUnreachable) || !strings.Contains(err.Error(), "unix:///nonexistent/docker.sock") {
		t.Errorf("unreachable daemon: %v", err)
	}
}

func TestConfigValidation(t *testing.T) {
	e := dockertest.Engine(t)
	tests := []struct {
		cfg  sandbox.Config
		want string
	}{
		{sandbox.Config{}, "image is required"},
		{sandbox.Config{Image: "x", Network: "host"}, `network "host": want none or bridge`},
		{sandbox.Config{Image: "x", Runtime: "--debug"}, `runtime "--debug": want a name`},
		{sandbox.Config{Image: "x", Disk: -2}, "disk -2 bytes: want a positive size or NoDiskLimit"},
		{sandbox.Config{Image: "x", Memory: 1024}, "want at least 6 MiB"},
		{sandbox.Config{Image: "x", Pids: 2}, "pids 2"},
		{sandbox.Config{Image: "x", Env: []string{"NOEQUALS"}}, `env entry "NOEQUALS"`},
	}
	for _, tt := range tests {
		_, err := e.Start(context.Background(), tt.cfg)
		if err == nil || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("Start(%+v) = %v, want an error containing %q", tt.cfg, err, tt.want)
		}
	}
}
