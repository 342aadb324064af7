package docker_test

import (
	"context"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"testing"

	"github.com/runner-dev/runner/internal/dockertest"
	"github.com/runner-dev/runner/sandbox"
)

// BenchmarkRuntimes compares gVisor's runsc with runc on the busybox test
// image, in the same run: the exec round trip of `true` on a running
// sandbox, a sandbox made ready (created, a 100-file workspace copied in,
// started) and closed, the copy in of a 1000-file workspace, and the copy
// out (Snapshot) of it. Report the ratios runsc/runc of each figure
// (bench/run.sh does not run this group; see BENCHMARKS.md for the command).
func BenchmarkRuntimes(b *testing.B) {
	image := dockertest.Busybox(b)
	small, large := workspaceDir(b, 100), workspaceDir(b, 1000)
	runtimes := []string{"runc", "runsc"}
	if os.Getenv("RUNNER_BENCH_REVERSE") != "" {
		slices.Reverse(runtimes)
	}
	ctx := context.Background()
	for _, rt := range runtimes {
		cfg := func(task, dir string) sandbox.Config {
			return sandbox.Config{Image: image, Runtime: rt, Workspace: dir, RunID: dockertest.RunID, TaskID: "bench-" + task + "-" + rt}
		}
		b.Run("op=exec/runtime="+rt, func(b *testing.B) {
			sb := start(b, cfg("exec", ""))
			for b.Loop() {
				res, err := sb.Exec(ctx, "true", sandbox.ExecOptions{})
				if err != nil || res.ExitCode != 0 {
					b.Fatalf("Exec: %+v, %v", res, err)
				}
			}
		})
		b.Run("op=ready/runtime="+rt, func(b *testing.B) {
			for b.Loop() {
				sb, err := dockertest.Engine(b).StartContainer(ctx, cfg("ready", small))
				if err != nil {
					b.Fatal(err)
				}
				if err := sb.Close(ctx); err != nil {
					b.Fatal(err)
				}
			}
		})
		b.Run("op=copyin-1000/runtime="+rt, func(b *testing.B) {
			for b.Loop() {
				sb, err := dockertest.Engine(b).StartContainer(ctx, cfg("copyin", large))
				if err != nil {
					b.Fatal(err)
				}
				b.StopTimer()
				sb.Close(ctx)
				b.StartTimer()
			}
		})
		b.Run("op=copyout-1000/runtime="+rt, func(b *testing.B) {
			for b.Loop() {
				b.StopTimer()
				sb, err := dockertest.Engine(b).StartContainer(ctx, cfg("copyout", large))
				if err != nil {
					b.Fatal(err)
				}
				b.StartTimer()
				rc, err := sb.Snapshot(ctx)
				if err != nil {
					b.Fatal(err)
				}
				if _, err := io.Copy(io.Discard, rc); err != nil {
					b.Fatal(err)
				}
				rc.Close()
				b.StopTimer()
				sb.Close(ctx)
				b.StartTimer()
			}
		})
	}
}

// workspaceDir is a directory of n small files in n/10 directories.
func workspaceDir(b *testing.B, n int) string {
	b.Helper()
	dir := b.TempDir()
	for i := range n {
		p := filepath.Join(dir, fmt.Sprintf("d%02d", i/10), fmt.Sprintf("f%04d.txt", i))
		os.MkdirAll(filepath.Dir(p), 0o755)
		if err := os.WriteFile(p, []byte(fmt.Sprintf("line %d\n", i)), 0o644); err != nil {
			b.Fatal(err)
		}
	}
	return dir
}
