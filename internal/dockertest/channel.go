package dockertest

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"sync"
	"testing"
	"time"
)

var (
	helperOnce sync.Once
	helperPath string
	helperErr  error
	helperOut  []byte
)

// ChannelHelper builds cmd/sandbox-channel, the sandbox's channel helper,
// as a static executable, once per test binary, and returns its path. A
// test binary cannot be the helper itself: built with the race detector,
// it is not static.
func ChannelHelper(t testing.TB) string {
	t.Helper()
	helperOnce.Do(func() {
		dir, err := os.MkdirTemp("", "runner-channel-helper-")
		if err != nil {
			helperErr = err
			return
		}
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
		defer cancel()
		helperPath = filepath.Join(dir, "sandbox-channel")
		cmd := exec.CommandContext(ctx, "go", "build", "-trimpath", "-ldflags=-s -w", "-o", helperPath, "github.com/runner-dev/runner/cmd/sandbox-channel")
		cmd.Env = append(os.Environ(), "CGO_ENABLED=0")
		helperOut, helperErr = cmd.CombinedOutput()
	})
	if helperErr != nil {
		t.Fatalf("build the channel helper: %v\n%s", helperErr, helperOut)
	}
	return helperPath
}
