package main

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/runner-dev/runner/internal/dockertest"
	"github.com/runner-dev/runner/internal/fakellm"
)

// The built binary runs a task with an allowlist: its own executable
// serves as the proxy (runner egress-proxy), the refusals reach the
// result and the trajectory, and the proxy and its network go with the
// run. Only refusals are asked for: a name not on the list and an IP
// address are refused before any lookup, so nothing leaves the machine.
func TestRunWithAllowlistRecordsRefusals(t *testing.T) {
	repo, head := sourceRepo(t, map[string]string{"a.txt": "a\n"})
	srv, script := modelServer(t, map[string][]fakellm.Turn{
		"Fetch": {
			fakellm.ToolCall("run_command", `{"command":"env | grep -ic _proxy=; wget -q -O - http://elsewhere.example.test/ ; wget -q -O - http://169.254.169.254/latest/meta-data/ ; echo done"}`),
			fakellm.ToolCall("complete", `{"summary":"Tried."}`),
		},
	})
	file := writeTaskFile(t, fmt.Sprintf(`
tasks:
  - id: fetch
    repo: %s
    prompt: "Fetch the page."
    image: %s
    network: {allow: ["pkg.example.test:443"]}
`, repo, dockertest.Busybox(t)))
	out := filepath.Join(t.TempDir(), "out")
	cmd := exec.CommandContext(t.Context(), runnerBinary(t), "run", file, "--out", out)
	cmd.Env = append(os.Environ(), "OPENAI_BASE_URL="+srv.URL(), "OPENAI_API_KEY="+e2eKey, "RUNNER_MODEL=gpt-4o-mini", "NO_COLOR=1")
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	if err := cmd.Run(); err != nil {
		var exit *exec.ExitError
		if !errors.As(err, &exit) {
			t.Fatal(err)
		}
	}
	pid := cmd.Process.Pid
	script.left(t)
	r := readResultLines(t, out)[0]
	if r.Status != "succeeded" {
		t.Fatalf("result = %+v\n%s", r, stderr.String())
	}
	if want := []string{"elsewhere.example.test:80", "169.254.169.254:80"}; !slices.Equal(r.RefusedHosts, want) {
		t.Errorf("refused_hosts = %q, want %q", r.RefusedHosts, want)
	}
	traj, err := os.ReadFile(filepath.Join(out, "trajectories", "fetch.1.jsonl"))
	if err != nil {
		t.Fatal(err)
	}
	if n := strings.Count(string(traj), `"type":"egress"`); n != 2 {
		t.Errorf("%d egress events in the trajectory, want 2", n)
	}
	if !strings.Contains(string(traj), `Exit code 0.\n6\n`) { // the six proxy variables, counted in the sandbox
		t.Errorf("the sandbox did not have the six proxy variables; trajectory:\n%s", traj)
	}
	userRepoUnchanged(t, repo, head)
	noLeftovers(t, pid)
	nets, err := exec.CommandContext(t.Context(), "docker", "network", "ls", "-q", "--filter", "label=dev.runner.owner.pid="+strconv.Itoa(pid)).CombinedOutput()
	if err != nil || strings.TrimSpace(string(nets)) != "" {
		t.Errorf("networks of the run left: %q %v", nets, err)
	}
}
