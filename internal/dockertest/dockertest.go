// Package dockertest gives tests a Docker engine and small images built
// locally, without any registry.
//
// Tests that need the engine fail when it cannot be reached; setting
// RUNNER_SKIP_DOCKER=1 turns that into a skip for machines without Docker.
// CI never sets it.
package dockertest

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/runner-dev/runner/internal/egress"
	"github.com/runner-dev/runner/sandbox"
	"github.com/runner-dev/runner/sandbox/docker"
)

var (
	engineOnce sync.Once
	engine     *docker.Engine
	engineErr  error
)

// Engine returns a shared connection to the engine, or ends the test.
func Engine(t testing.TB) *docker.Engine {
	t.Helper()
	engineOnce.Do(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
		defer cancel()
		engine, engineErr = docker.Connect(ctx)
	})
	if engineErr != nil {
		if os.Getenv("RUNNER_SKIP_DOCKER") == "1" {
			t.Skipf("no Docker engine (RUNNER_SKIP_DOCKER=1): %v", engineErr)
		}
		t.Fatalf("this test needs a Docker engine (set RUNNER_SKIP_DOCKER=1 to skip): %v", engineErr)
	}
	return engine
}

// RunID is the sandbox run id that tests of this process use, so that
// CheckLeftovers can find what they leave behind.
var RunID = fmt.Sprintf("test-%d", os.Getpid())

// CheckLeftovers reports (and removes) the sandbox containers that this test
// process still owns. Call it from TestMain after m.Run; a non-empty answer
// means some cleanup path is broken.
func CheckLeftovers() []string {
	if engine == nil {
		return nil
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	list, err := engine.List(ctx)
	if err != nil {
		return []string{err.Error()}
	}
	self := sandbox.Self()
	var left []string
	for _, l := range list {
		if l.Owner == self || strings.HasPrefix(l.Run, RunID) {
			left = append(left, fmt.Sprintf("%s (task %q, %s)", l.Name, l.Task, l.State))
		}
	}
	if len(left) > 0 {
		engine.RemoveRun(ctx, RunID)
		for _, l := range list {
			if l.Owner == self {
				engine.RemoveRun(ctx, l.Run)
			}
		}
	}
	return left
}

// Main runs the tests of a package that uses the engine and fails the run
// if any sandbox container was left behind.
//
// The test binary also stands in for runner's own: a sandbox with an
// egress allowlist runs the current executable as "egress-proxy" in a
// container, and Main serves that instead of running the tests.
func Main(m *testing.M) int {
	if len(os.Args) > 1 && os.Args[1] == "egress-proxy" {
		return egress.Main(os.Args[2:], os.Stdout, os.Stderr)
	}
	code := m.Run()
	if helperPath != "" {
		os.RemoveAll(filepath.Dir(helperPath))
	}
	if left := CheckLeftovers(); len(left) > 0 {
		fmt.Fprintf(os.Stderr, "FAIL: sandbox containers left behind by the tests:\n  %s\n", strings.Join(left, "\n  "))
		if code == 0 {
			code = 1
		}
	}
	return code
}
