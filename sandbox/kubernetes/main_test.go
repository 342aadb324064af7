package kubernetes_test

import (
	"context"
	"fmt"
	"os"
	"testing"
	"time"

	"github.com/runner-dev/runner/internal/k8stest"
	"github.com/runner-dev/runner/sandbox"
	"github.com/runner-dev/runner/sandbox/kubernetes"
)

// runID labels every sandbox of this test process.
var runID = fmt.Sprintf("k8s-test-%d", os.Getpid())

// start starts a sandbox of the busybox test image on b, closed at the end
// of the test.
func start(t testing.TB, b *kubernetes.Backend, cfg sandbox.Config) *kubernetes.Sandbox {
	t.Helper()
	if cfg.Image == "" {
		cfg.Image = k8stest.Image(t)
	}
	if cfg.RunID == "" {
		cfg.RunID = runID
	}
	if cfg.TaskID == "" {
		cfg.TaskID = t.Name()
	}
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	sb, err := b.StartPod(ctx, cfg)
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
func run(t testing.TB, sb sandbox.Sandbox, cmd string, opt sandbox.ExecOptions) sandbox.ExecResult {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	res, err := sb.Exec(ctx, cmd, opt)
	if err != nil {
		t.Fatalf("Exec(%q): %v", cmd, err)
	}
	return res
}
