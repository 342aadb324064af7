package docker_test

import (
	"context"
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/runner-dev/runner/internal/dockertest"
	"github.com/runner-dev/runner/sandbox"
	"github.com/runner-dev/runner/sandbox/docker"
)

func TestMain(m *testing.M) {
	if helper := os.Getenv("SANDBOX_TEST_HELPER"); helper != "" {
		os.Exit(runHelper(helper))
	}
	os.Exit(dockertest.Main(m))
}

// start starts a sandbox from the busybox test image, closed at the end of
// the test.
func start(t testing.TB, cfg sandbox.Config) *docker.Sandbox {
	t.Helper()
	return startOn(t, dockertest.Engine(t), cfg)
}

// startOn is start on engine e.
func startOn(t testing.TB, e *docker.Engine, cfg sandbox.Config) *docker.Sandbox {
	t.Helper()
	if cfg.Image == "" {
		cfg.Image = dockertest.Busybox(t)
	}
	if cfg.RunID == "" {
		cfg.RunID = dockertest.RunID
	}
	if cfg.TaskID == "" {
		cfg.TaskID = t.Name()
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	sb, err := e.StartContainer(ctx, cfg)
	if err != nil {
		t.Fatalf("Start: %v", err)
	}
	t.Cleanup(func() {
		if err := sb.Close(context.Background()); err != nil {
			t.Errorf("Close: %v", err)
		}
	})
	return sb
}

// run runs cmd and fails the test on an infrastructure error.
func run(t *testing.T, sb sandbox.Sandbox, cmd string, opt sandbox.ExecOptions) sandbox.ExecResult {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	res, err := sb.Exec(ctx, cmd, opt)
	if err != nil {
		t.Fatalf("Exec(%q): %v", cmd, err)
	}
	return res
}

// output runs cmd, requires exit code 0 and returns stdout, trimmed.
func output(t *testing.T, sb sandbox.Sandbox, cmd string) string {
	t.Helper()
	res := run(t, sb, cmd, sandbox.ExecOptions{})
	if res.ExitCode != 0 {
		t.Fatalf("Exec(%q): exit code %d, output:\n%s", cmd, res.ExitCode, res.Output)
	}
	return strings.TrimSpace(res.Stdout)
}

// dockerCLI runs the docker CLI, an independent reader of the engine.
func dockerCLI(t *testing.T, args ...string) (string, error) {
	t.Helper()
	out, err := exec.Command("docker", args...).CombinedOutput()
	return strings.TrimSpace(string(out)), err
}
