package docker_test

import (
	"context"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/runner-dev/runner/sandbox"
	"github.com/runner-dev/runner/sandbox/docker"
)

// BenchmarkTask50 runs a task's worth of commands, 50 in a row (`true`),
// on one sandbox, with an exec per command and through the sandbox's
// channel, and reports the host's CPU time per task: runner's own
// (cpu-ms-runner/task, this process) and the engine's (cpu-ms-engine/task:
// dockerd, containerd and the container shims, with the runtime processes
// they reaped), which is what saturates a machine at high concurrency.
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
			self0, engine0 := selfCPU(), engineCPU()
			for b.Loop() {
				for range 50 {
					res, err := sb.Exec(ctx, "true", sandbox.ExecOptions{})
					if err != nil || res.ExitCode != 0 {
						b.Fatalf("Exec: %+v, %v", res, err)
					}
				}
			}
			n := float64(b.N)
			b.ReportMetric(float64((selfCPU()-self0).Milliseconds())/n, "cpu-ms-runner/task")
			b.ReportMetric(float64((engineCPU()-engine0).Milliseconds())/n, "cpu-ms-engine/task")
		})
	}
}

// selfCPU is this process's CPU time so far.
func selfCPU() time.Duration {
	var ru syscall.Rusage
	syscall.Getrusage(syscall.RUSAGE_SELF, &ru)
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// engineCPU is the CPU time so far of the engine's processes (dockerd,
// containerd, containerd-shim*), children they reaped included. A shim that
// exits in between is not counted; none does while its container runs.
func engineCPU() time.Duration {
	stats, _ := filepath.Glob("/proc/[0-9]*/stat")
	var ticks int64
	for _, f := range stats {
		body, err := os.ReadFile(f)
		if err != nil {
			continue
		}
		s := string(body)
		open, end := strings.IndexByte(s, '('), strings.LastIndexByte(s, ')')
		if open < 0 || end < open {
			continue
		}
		name := s[open+1 : end]
		if name != "dockerd" && name != "containerd" && !strings.HasPrefix(name, "containerd-shim") {
			continue
		}
		fields := strings.Fields(s[end+2:])
		// utime, stime, cutime, cstime: fields 14-17 of stat, 12-15 here.
		for _, v := range fields[11:15] {
			n, _ := strconv.ParseInt(v, 10, 64)
			ticks += n
		}
	}
	return time.Duration(ticks) * time.Second / 100 // USER_HZ
}
