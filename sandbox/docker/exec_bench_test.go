package docker_test

import (
	"context"
	"os"
	"os/exec"
	"slices"
	"testing"

	"github.com/runner-dev/runner/internal/dockertest"
	"github.com/runner-dev/runner/sandbox"
)

// BenchmarkExec measures one round trip of the command `true` on a running
// sandbox three ways, on the same container: the docker CLI a user would
// script, the bare Engine API calls any exec needs (the floor: ExecCreate,
// ExecAttach, the output read to its end, ExecInspect), and runner's Exec.
// It does so on the busybox test image and on the Debian sandbox image
// (dash, dynamically linked programs). Goal: runner faster than the CLI,
// within 1.2x of the floor; through the sandbox's channel (runner-channel,
// a second sandbox of the same image), at most 0.1x of runner's exec.
func BenchmarkExec(b *testing.B) {
	for _, img := range []struct {
		name  string
		image func(testing.TB) string
	}{
		{"busybox", dockertest.Busybox},
		{"debian", dockertest.SandboxImage},
	} {
		sb := start(b, sandbox.Config{Image: img.image(b), TaskID: "bench-exec-" + img.name})
		sbc := startOn(b, channelEngine(b), sandbox.Config{Image: img.image(b), TaskID: "bench-exec-channel-" + img.name})
		ctx := context.Background()
		impls := []struct {
			name string
			run  func(b *testing.B)
		}{{"docker-cli", func(b *testing.B) {
			for b.Loop() {
				out, err := exec.Command("docker", "exec", "-u", "1000:1000", "-w", sandbox.Workdir,
					sb.ID(), "sh", "-c", "true").CombinedOutput()
				if err != nil {
					b.Fatalf("docker exec: %v\n%s", err, out)
				}
			}
		}}, {"bare-api", func(b *testing.B) {
			for b.Loop() {
				code, err := sb.BareExec(ctx, "sh", "-c", "true")
				if err != nil || code != 0 {
					b.Fatalf("BareExec: code %d, err %v", code, err)
				}
			}
		}}, {"runner", func(b *testing.B) {
			for b.Loop() {
				res, err := sb.Exec(ctx, "true", sandbox.ExecOptions{})
				if err != nil || res.ExitCode != 0 || res.Detached || res.TimedOut {
					b.Fatalf("Exec: %+v, err %v", res, err)
				}
			}
		}}, {"runner-channel", func(b *testing.B) {
			for b.Loop() {
				res, err := sbc.Exec(ctx, "true", sandbox.ExecOptions{})
				if err != nil || res.ExitCode != 0 || res.Detached || res.TimedOut {
					b.Fatalf("Exec: %+v, err %v", res, err)
				}
			}
		}}}
		// bench/run.sh reverses the order every other round, so that no
		// side always runs in the wake of another.
		if os.Getenv("RUNNER_BENCH_REVERSE") != "" {
			slices.Reverse(impls)
		}
		for _, im := range impls {
			b.Run("image="+img.name+"/impl="+im.name, im.run)
		}
	}
}
