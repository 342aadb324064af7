package main

import (
	"context"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/runner-dev/runner/internal/dockertest"
	"github.com/runner-dev/runner/sandbox"
)

// runner cache ls lists a cached environment; prune --keep over its size
// leaves it; a bad --env-cache-size is a usage error.
func TestCacheCommands(t *testing.T) {
	e := dockertest.Engine(t)
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	env, err := e.Prepare(ctx, sandbox.Setup{
		Base:     sandbox.Config{Image: dockertest.Busybox(t), Workspace: t.TempDir(), RunID: dockertest.RunID, TaskID: "cache-cli"},
		Commands: []string{"echo ready > /etc/ready"}, Network: "none", Key: "cli-" + sandbox.RandomID(), CacheLimit: -1,
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { e.RemoveEnvironment(context.Background(), env.Key) })
	listed := func(args ...string) bool {
		t.Helper()
		res := runMain(t, append([]string{"--json", "cache"}, args...)...)
		if res.code != 0 {
			t.Fatalf("cache %v: exit %d: %s", args, res.code, res.stderr)
		}
		var list []sandbox.CacheEntry
		if err := json.Unmarshal([]byte(res.stdout), &list); err != nil {
			t.Fatalf("cache %v --json: %v: %s", args, err, res.stdout)
		}
		for _, ent := range list {
			if ent.Key == env.Key {
				return true
			}
		}
		return false
	}
	if !listed("ls") {
		t.Errorf("cache ls does not list %s", env.Key)
	}
	if listed("prune", "--keep", "1000g") || !listed("ls") {
		t.Errorf("prune --keep 1000g removed %s", env.Key)
	}
	res := runMain(t, "cache", "ls")
	if !strings.Contains(res.stdout, env.Key[:16]) || !strings.Contains(res.stdout, "environment(s)") {
		t.Errorf("cache ls:\n%s", res.stdout)
	}
	file := t.TempDir() + "/tasks.yaml"
	writeFile(t, file, "tasks:\n  - {id: a, repo: /nonexistent, prompt: Do it.}\n")
	if res := runMain(t, "run", "--model", "gpt-4o-mini", "--env-cache-size", "lots", file); res.code != 2 || !strings.Contains(res.stderr, "--env-cache-size") {
		t.Errorf("run --env-cache-size lots: exit %d: %s", res.code, res.stderr)
	}
}
