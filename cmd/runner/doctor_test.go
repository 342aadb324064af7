package main

import (
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/runner-dev/runner/internal/cli"
	"github.com/runner-dev/runner/internal/dockertest"
	"github.com/runner-dev/runner/internal/fakellm"
)

// doctorReport is the --json output of runner doctor.
type doctorReport struct {
	OK       bool      `json:"ok"`
	Findings []finding `json:"findings"`
}

func (r doctorReport) find(check string) *finding {
	for i := range r.Findings {
		if r.Findings[i].Check == check {
			return &r.Findings[i]
		}
	}
	return nil
}

// The doctor tries every runtime the engine has with a real sandbox, and
// says how to add one it lacks; a runtime asked for and missing is exit 2.
func TestDoctor(t *testing.T) {
	busybox := dockertest.Busybox(t)
	res := runMain(t, "--json", "doctor", "--image", busybox, "--runtime", "runc", "--runtime", "no-such-runtime")
	if res.code != cli.ExitUsage {
		t.Fatalf("%s\nwant exit code 2", res)
	}
	var rep doctorReport
	if err := json.Unmarshal([]byte(res.stdout), &rep); err != nil {
		t.Fatalf("stdout is not JSON: %v\n%s", err, res.stdout)
	}
	if f := rep.find("engine"); f == nil || !f.OK || !strings.Contains(f.Detail, "runc") {
		t.Errorf("engine finding %+v, want ok and the runtimes listed", f)
	}
	if f := rep.find("image " + busybox); f == nil || !f.OK {
		t.Errorf("image finding %+v, want ok", f)
	}
	if f := rep.find("runtime runc"); f == nil || !f.OK || !f.Required || !strings.Contains(f.Detail, "ran a command") {
		t.Errorf("runc finding %+v, want a sandbox tried and ok", f)
	}
	if f := rep.find("runtime no-such-runtime"); f == nil || f.OK || !f.Required || !strings.Contains(f.Advice, "daemon.json") {
		t.Errorf("missing runtime finding %+v, want required, failed, with how to declare it", f)
	}
	if rep.OK {
		t.Errorf("ok = true with a required runtime missing")
	}
	out, err := exec.CommandContext(t.Context(), "docker", "ps", "-a", "--filter", fmt.Sprintf("label=dev.runner.run=doctor-%d", os.Getpid()), "--format", "{{.Names}}").CombinedOutput()
	if err != nil || strings.TrimSpace(string(out)) != "" {
		t.Errorf("the doctor's sandboxes are left behind: %v %s", err, out)
	}

	res = runMain(t, "doctor", "--image", "runner-no-such-image:1")
	if res.code != cli.ExitUsage || !strings.Contains(res.stdout, "FAIL image runner-no-such-image:1: not found") ||
		!strings.Contains(res.stdout, "docker pull runner-no-such-image:1") {
		t.Errorf("doctor with a missing image: %s\nwant exit 2 and how to get it", res)
	}
}

// A task asking for a runtime the engine lacks stops the run before any
// sandbox starts or any model call is made.
func TestRunRefusesARuntimeTheEngineLacks(t *testing.T) {
	repo, _ := sourceRepo(t, map[string]string{"a": "a\n"})
	srv := fakellm.New(t)
	file := writeTaskFile(t, fmt.Sprintf(`
tasks:
  - {id: gvisor-elsewhere, repo: %s, prompt: p, image: %s, runtime: no-such-runtime}
`, repo, dockertest.Busybox(t)))
	res, pid := runRunner(t, srv, "run", file, "--out", filepath.Join(t.TempDir(), "out"))
	if res.code != cli.ExitUsage {
		t.Fatalf("runner run: %s\nwant exit code 2", res)
	}
	for _, want := range []string{`runtime "no-such-runtime" (task gvisor-elsewhere)`, "runner doctor --runtime no-such-runtime"} {
		if !strings.Contains(res.stderr, want) {
			t.Errorf("stderr lacks %q:\n%s", want, res.stderr)
		}
	}
	if n := len(srv.Requests()); n != 0 {
		t.Errorf("%d model calls were made before the runtime was checked", n)
	}
	noLeftovers(t, pid)
}
