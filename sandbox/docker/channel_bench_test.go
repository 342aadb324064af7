package docker_test

import (
	"context"
	"testing"
	"time"

	"github.com/runner-dev/runner/internal/hostcpu"
	"github.com/runner-dev/runner/sandbox"
	"github.com/runner-dev/runner/sandbox/docker"
)

// BenchmarkTask50 runs a task's worth of commands, 50 in a row (`true`),
// on one sandbox, with an exec per command and through the sandbox's
// channel, and reports the host's CPU time per task (internal/hostcpu):
// runner's own (cpu-ms-runner/task, this process), the engine's
// (cpu-ms-engine/task: dockerd, containerd, the container shims and the
// runtime processes they start), which is what saturates a machine at
// high concurrency, and the sandbox's processes' (cpu-ms-sandbox/task).
func BenchmarkTask50(b *testing.B) {
	for _, mode := range []string{"exec", "channel"} {
		b.Run("mode="+mode, func(b *testing.B) {
			var sb *docker.Sandbox
			if mode == "channel" {
				sb = startOn(b, channelEngine(b), sandbox.Config{TaskID: "bench-task50-" + mode})
			} else {
				sb = start(b, sandbox.Config{TaskID: "bench-task50-" + mode})
			}
			ctx := context.Background()
			meter, err := hostcpu.Start()
			if err != nil {
				b.Fatal(err)
			}
			for b.Loop() {
				for range 50 {
					res, err := sb.Exec(ctx, "true", sandbox.ExecOptions{})
					if err != nil || res.ExitCode != 0 {
						b.Fatalf("Exec: %+v, %v", res, err)
					}
				}
			}
			u, err := meter.Stop()
			if err != nil {
				b.Fatal(err)
			}
			n := float64(b.N)
			b.ReportMetric(float64(u.Runner)/float64(time.Millisecond)/n, "cpu-ms-runner/task")
			b.ReportMetric(float64(u.Engine)/float64(time.Millisecond)/n, "cpu-ms-engine/task")
			b.ReportMetric(float64(u.Sandbox)/float64(time.Millisecond)/n, "cpu-ms-sandbox/task")
		})
	}
}
