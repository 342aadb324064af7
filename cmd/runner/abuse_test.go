package main

import (
	"fmt"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/runner-dev/runner/internal/cli"
	"github.com/runner-dev/runner/internal/dockertest"
	"github.com/runner-dev/runner/internal/fakellm"
	"github.com/runner-dev/runner/tasks"
)

// A command that spins the CPU forever, asking for the longest timeout, is
// ended by the task's deadline; the task says time_limit and its container
// is gone.
func TestCPUSpinEndedByTaskDeadline(t *testing.T) {
	repo, head := sourceRepo(t, map[string]string{"a.txt": "a\n"})
	srv, _ := modelServer(t, map[string][]fakellm.Turn{
		"Spin": {fakellm.ToolCall("run_command", `{"command":"while :; do :; done","timeout":1800}`)},
	})
	file := writeTaskFile(t, fmt.Sprintf(`
tasks: [{id: spin, repo: %s, prompt: "Spin.", image: %s, timeout: 8s}]
`, repo, dockertest.Busybox(t)))
	out := filepath.Join(t.TempDir(), "out")
	runnerBinary(t) // built first: the bound is on the run, not on the build
	begin := time.Now()
	res, pid := runRunner(t, srv, "run", file, "--out", out)
	if took := time.Since(begin); took > 60*time.Second {
		t.Errorf("the run took %s for an 8s task", took)
	}
	if res.code != cli.ExitFailure {
		t.Fatalf("runner run: %s", res)
	}
	r := readResultLines(t, out)[0]
	if r.Status != tasks.StatusTimeLimit || !strings.Contains(r.Error, "time limit") {
		t.Errorf("result = %+v; want time_limit", r)
	}
	userRepoUnchanged(t, repo, head)
	noLeftovers(t, pid)
}
