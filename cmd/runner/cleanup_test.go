package main

import (
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/runner-dev/runner/internal/cli"
	"github.com/runner-dev/runner/internal/dockertest"
	"github.com/runner-dev/runner/sandbox"
	"github.com/runner-dev/runner/sandbox/docker"
)

// deadOwner is the owner record of a process of this host that has exited.
func deadOwner(t *testing.T) sandbox.Owner {
	t.Helper()
	cmd := exec.Command("true")
	if err := cmd.Run(); err != nil {
		t.Fatal(err)
	}
	host, _ := os.Hostname()
	return sandbox.Owner{Host: host, PID: cmd.Process.Pid}
}

// startTestSandbox starts a busybox sandbox of this test process's runs, owned
// by owner, and removes it at the end of the test if it still exists.
func startTestSandbox(t *testing.T, task string, owner sandbox.Owner) *docker.Sandbox {
	t.Helper()
	e := dockertest.Engine(t).OwnedBy(owner)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	sb, err := e.StartContainer(ctx, sandbox.Config{
		Image: dockertest.Busybox(t), RunID: dockertest.RunID + "-" + task, TaskID: task,
	})
	if err != nil {
		t.Fatalf("Start: %v", err)
	}
	t.Cleanup(func() { sb.Close(context.Background()) })
	return sb
}

// containerRunning asks the docker CLI whether container id exists and runs.
func containerRunning(t *testing.T, id string) (exists, running bool) {
	t.Helper()
	out, err := exec.Command("docker", "inspect", "--format", "{{.State.Running}}", id).Output()
	if err != nil {
		return false, false
	}
	return true, strings.TrimSpace(string(out)) == "true"
}

func TestCleanup(t *testing.T) {
	dead := startTestSandbox(t, "cli-cleanup-dead", deadOwner(t))
	live := startTestSandbox(t, "cli-cleanup-live", sandbox.Self())

	res := runMain(t, "cleanup", "--dry-run")
	if res.code != cli.ExitOK {
		t.Fatalf("cleanup --dry-run: %s", res)
	}
	if !strings.Contains(res.stdout, "would remove "+dead.Name()+` (task "cli-cleanup-dead"`) ||
		!strings.Contains(res.stdout, "owner dead") {
		t.Errorf("dry run does not list %s as removable:\n%s", dead.Name(), res)
	}
	if strings.Contains(res.stdout, live.Name()) {
		t.Errorf("dry run lists the live sandbox %s:\n%s", live.Name(), res.stdout)
	}
	for _, sb := range []*docker.Sandbox{dead, live} {
		if exists, running := containerRunning(t, sb.ID()); !exists || !running {
			t.Errorf("after the dry run, %s exists=%v running=%v; want it running", sb.Name(), exists, running)
		}
	}

	res = runMain(t, "--json", "cleanup")
	if res.code != cli.ExitOK {
		t.Fatalf("cleanup: %s", res)
	}
	var rep struct {
		DryRun  bool           `json:"dry_run"`
		Removed []leftoverView `json:"removed"`
		Kept    []leftoverView `json:"kept"`
	}
	if err := json.Unmarshal([]byte(res.stdout), &rep); err != nil {
		t.Fatalf("stdout is not JSON: %v\n%s", err, res.stdout)
	}
	find := func(ls []leftoverView, id string) *leftoverView {
		for i := range ls {
			if ls[i].ID == id {
				return &ls[i]
			}
		}
		return nil
	}
	if l := find(rep.Removed, dead.ID()); rep.DryRun || l == nil || l.Why != "owner dead" || l.Task != "cli-cleanup-dead" {
		t.Errorf("cleanup report: dry_run=%v, dead sandbox %+v; want it removed, owner dead", rep.DryRun, l)
	}
	if l := find(rep.Kept, live.ID()); l == nil || find(rep.Removed, live.ID()) != nil {
		t.Errorf("the live sandbox is not reported kept:\n%s", res.stdout)
	}
	if exists, _ := containerRunning(t, dead.ID()); exists {
		t.Errorf("%s still exists after cleanup", dead.Name())
	}
	if _, running := containerRunning(t, live.ID()); !running {
		t.Errorf("cleanup stopped or removed the live sandbox %s", live.Name())
	}
}
