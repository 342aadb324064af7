package docker_test

import (
	"context"
	"strings"
	"testing"
	"time"

	runner "github.com/runner-dev/runner"
	"github.com/runner-dev/runner/internal/dockertest"
	"github.com/runner-dev/runner/sandbox"
)

// The embedded Dockerfile.sandbox builds on an offline machine from a local
// Debian base, and the image it makes runs real tools as user 1000.
func TestBuildSandboxImageFromEmbeddedDockerfile(t *testing.T) {
	e := dockertest.Engine(t)
	base := dockertest.Debian(t, dockertest.SandboxPackages(t)...)
	tag := "runner-test-sandbox:" + strings.TrimPrefix(base[strings.LastIndex(base, ":")+1:], "bookworm-")
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()
	var progress strings.Builder
	err := e.Build(ctx, sandbox.BuildOptions{
		Dockerfile: runner.SandboxDockerfile, Tag: tag,
		Args:     map[string]string{"BASE_IMAGE": base},
		Progress: &progress,
	})
	if err != nil {
		t.Fatalf("Build: %v\n%s", err, progress.String())
	}
	if strings.Contains(progress.String(), "apt-get update") && strings.Contains(progress.String(), "Get:") {
		t.Errorf("the build went to the network although the base had every package:\n%s", progress.String())
	}
	sb := start(t, sandbox.Config{Image: tag})
	got := output(t, sb, `id -un; pwd; git --version | cut -d' ' -f1-2; for c in timeout make gcc python3 jq; do command -v $c; done | wc -l; echo "$HOME"`)
	want := "sandbox\n/workspace\ngit version\n5\n/home/sandbox"
	if got != want {
		t.Errorf("in the built image:\n%s\nwant:\n%s", got, want)
	}
	// git works as the sandbox user on the copied-in workspace.
	got = output(t, sb, `git init -q . && git -c user.name=a -c user.email=a@b commit -q --allow-empty -m first && git log --format=%s`)
	if got != "first" {
		t.Errorf("git in the sandbox: %q", got)
	}
}

func TestBuildReportsFailure(t *testing.T) {
	e := dockertest.Engine(t)
	err := e.Build(context.Background(), sandbox.BuildOptions{
		Dockerfile: []byte("FROM " + dockertest.Busybox(t) + "\nRUN exit 7\n"), Tag: "runner-test-broken:latest",
	})
	if err == nil || !strings.Contains(err.Error(), "non-zero code: 7") {
		t.Errorf("Build of a failing Dockerfile: %v, want the step's exit code", err)
	}
}
