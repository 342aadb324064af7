package docker_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/runner-dev/runner/internal/dockertest"
	"github.com/runner-dev/runner/sandbox"
)

// The environment just built survives a cache cap smaller than itself (the
// task is about to start from it), and its image holds none of the task's
// environment, which each setup command still gets.
func TestSetupKeepsWhatItBuiltAndNoTaskEnv(t *testing.T) {
	e := dockertest.Engine(t)
	marker := "task-only-" + sandbox.RandomID()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()
	env, err := e.Prepare(ctx, sandbox.Setup{
		Base: sandbox.Config{Image: dockertest.Busybox(t), Workspace: t.TempDir(), RunID: dockertest.RunID, TaskID: t.Name(),
			Env: []string{"TASK_ONLY=" + marker}},
		Commands:   []string{`echo "$TASK_ONLY" > /setup-saw`},
		CacheLimit: 1, // smaller than any image
	})
	if err != nil {
		t.Fatalf("Prepare: %v", err)
	}
	t.Cleanup(func() {
		_ = e.RemoveEnvironment(context.Background(), env.Key)
		_ = e.Release(context.Background(), env)
	})
	cfgEnv, err := dockerCLI(t, "image", "inspect", "-f", "{{json .Config.Env}}", env.Image)
	if err != nil {
		t.Fatalf("the environment just built is gone after the cache was trimmed: %v: %s", err, cfgEnv)
	}
	if strings.Contains(cfgEnv, marker) || strings.Contains(cfgEnv, "TASK_ONLY") {
		t.Errorf("the cached image carries the task's environment: %s", cfgEnv)
	}
	sb := startOn(t, e, sandbox.Config{Image: env.Image, Workspace: t.TempDir()})
	if got := output(t, sb, "cat /setup-saw; echo ${TASK_ONLY:-unset}"); got != marker+"\nunset" {
		t.Errorf("in the sandbox: %q, want what setup saw and no TASK_ONLY of its own", got)
	}
}
