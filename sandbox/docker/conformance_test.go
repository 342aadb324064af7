package docker_test

import (
	"os"
	"os/exec"
	"strings"
	"testing"

	"github.com/runner-dev/runner/internal/dockertest"
	"github.com/runner-dev/runner/sandbox"
	"github.com/runner-dev/runner/sandbox/docker"
	"github.com/runner-dev/runner/sandbox/sandboxtest"
)

// The Docker backend passes the whole conformance suite under every runtime
// runner supports: runc, the engine's default, and gVisor's runsc. A
// runtime the engine lacks fails the test (CI declares both, see .ci/runsc);
// RUNNER_SKIP_RUNSC=1 turns that into a skip on a machine without gVisor.
func TestConformance(t *testing.T) {
	conformance(t, dockertest.Engine(t))
}

// conformance runs the suite against e under runc and runsc.
func conformance(t *testing.T, e *docker.Engine) {
	swapper := swapperBinary(t)
	for _, rt := range []string{"runc", "runsc"} {
		t.Run(rt, func(t *testing.T) {
			if rt == "runsc" && !hasRuntime(t, rt) {
				if os.Getenv("RUNNER_SKIP_RUNSC") == "1" {
					t.Skip("the engine has no runsc runtime (RUNNER_SKIP_RUNSC=1)")
				}
				t.Fatal("the engine has no runsc runtime: declare it (.ci/runsc does), or set RUNNER_SKIP_RUNSC=1 to skip")
			}
			sandboxtest.Run(t, sandboxtest.Target{
				Backend: e, Image: dockertest.Busybox(t), Runtime: rt, RunID: dockertest.RunID,
				OwnedBy: func(o sandbox.Owner) sandbox.Backend { return e.OwnedBy(o) },
				Swapper: swapper,
				Caps: sandboxtest.Caps{
					Processes: true, Isolation: true, Leftovers: true,
					// gVisor applies no_new_privs but its /proc does not
					// show the line, and it reports no OOM kill to the
					// engine: its sentry kills the process inside.
					NoNewPrivsShown: rt == "runc",
					OOMReported:     rt == "runc",
					// gVisor's kernel runs the sandbox's processes on host
					// threads that the pids cgroup counts.
					PidsCountsHostThreads: rt == "runsc",
					OOMMayEndSandbox:      rt == "runsc",
				},
			})
		})
	}
}

// hasRuntime asks the docker CLI, an independent reader, whether the engine
// offers runtime rt.
func hasRuntime(t *testing.T, rt string) bool {
	t.Helper()
	out, err := exec.CommandContext(t.Context(), "docker", "info", "--format", "{{json .Runtimes}}").Output()
	if err != nil {
		t.Fatalf("docker info: %v", err)
	}
	return strings.Contains(string(out), `"`+rt+`"`)
}
