// Package bench measures runner's own overhead against the tools a user
// would otherwise script by hand (the docker and git CLIs), in the same run
// on the same machine. Every benchmark has an impl=runner sub-benchmark and
// one or more baselines beside it; bench/run.sh repeats them and prints
// medians and ratios. BENCHMARKS.md publishes the figures.
//
// The benchmarks need a Docker engine, git and busybox-static, like the
// sandbox tests. Nothing here runs without -bench, except the small tests
// of the fixtures themselves.
package bench

import (
	"os"
	"testing"

	"github.com/runner-dev/runner/internal/dockertest"
)

func TestMain(m *testing.M) {
	// Every git process, the baselines' and go-git's local transports,
	// runs without the machine's configuration.
	for k, v := range gitEnv {
		os.Setenv(k, v)
	}
	os.Exit(dockertest.Main(m))
}
