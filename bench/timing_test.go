package bench

import (
	"os"
	"slices"
	"syscall"
	"testing"
	"time"
)

// impl is one way of doing the work a benchmark measures: runner's, or a
// baseline's.
type impl struct {
	name string
	run  func(b *testing.B)
}

// runImpls runs each implementation as the sub-benchmark <prefix>impl=<name>.
// With RUNNER_BENCH_REVERSE set (bench/run.sh sets it every other round)
// they run in reverse order, so that no side always runs in the wake of the
// other's work.
func runImpls(b *testing.B, prefix string, impls ...impl) {
	if os.Getenv("RUNNER_BENCH_REVERSE") != "" {
		slices.Reverse(impls)
	}
	for _, im := range impls {
		b.Run(prefix+"impl="+im.name, im.run)
	}
}

// untimed runs f with the benchmark timer stopped.
func untimed(b *testing.B, f func()) {
	b.StopTimer()
	f()
	b.StartTimer()
}

// settle flushes to disk what the untimed cleanup just deleted or wrote
// (thousands of files of a removed container or clone), so that its
// writeback does not land on the next timed step.
func settle() { syscall.Sync() }

// perFile reports the timed cost per file of the workspace.
func perFile(b *testing.B, files int) {
	if files > 0 {
		b.ReportMetric(float64(b.Elapsed())/float64(b.N*files)/float64(time.Microsecond), "µs/file")
	}
}
