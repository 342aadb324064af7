package hostcpu_test

import (
	"context"
	"os"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/runner-dev/runner/internal/dockertest"
	"github.com/runner-dev/runner/internal/hostcpu"
	"github.com/runner-dev/runner/sandbox"
)

func TestMain(m *testing.M) { os.Exit(dockertest.Main(m)) }

// A command in a container started after StartNew counts as the
// sandbox's, whole, though the container is gone before Stop (its
// processes and shim read from exit records only); the same command in a
// container that was running before StartNew counts nowhere.
func TestMeterCountsNewContainersOnly(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("the exit records need root")
	}
	ctx := context.Background()
	old := startSandbox(t, "old")
	m, err := hostcpu.StartNew()
	if err != nil {
		t.Fatal(err)
	}
	stopped := false
	defer func() {
		if !stopped {
			m.Stop()
		}
	}()
	fresh := startSandbox(t, "new")
	burnNew := burn(t, fresh, 150000)
	burnOld := burn(t, old, 1000000)
	if err := fresh.Close(ctx); err != nil {
		t.Fatal(err)
	}
	u, err := m.Stop()
	stopped = true
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("new container's command %v, old one's %v; usage %+v", burnNew, burnOld, u)
	if u.Sandbox < burnNew*9/10 {
		t.Errorf("sandbox %v, less than the new container's command alone (%v)", u.Sandbox, burnNew)
	}
	// The new container's other processes (its start's, the command
	// wrapper's, runc's last stage in each exec's command) stay well under
	// half the old one's long command.
	if u.Sandbox >= burnNew+burnOld/2 {
		t.Errorf("sandbox %v counts the old container's command (%v) too", u.Sandbox, burnOld)
	}
	if u.Engine <= 0 {
		t.Errorf("engine %v: the new container's shim and runc count for nothing", u.Engine)
	}
}

func startSandbox(t *testing.T, name string) sandbox.Sandbox {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	sb, err := dockertest.Engine(t).Start(ctx, sandbox.Config{Image: dockertest.Busybox(t), RunID: dockertest.RunID, TaskID: "hostcpu-" + name})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { sb.Close(context.Background()) })
	return sb
}

// burn runs a shell loop of n rounds in sb and returns the CPU time the
// shell says it spent (utime and stime of its /proc stat).
func burn(t *testing.T, sb sandbox.Sandbox, n int) time.Duration {
	t.Helper()
	res, err := sb.Exec(context.Background(), "i=0; while [ $i -lt "+strconv.Itoa(n)+" ]; do i=$((i+1)); done; cat /proc/$$/stat", sandbox.ExecOptions{})
	if err != nil || res.ExitCode != 0 {
		t.Fatalf("Exec: %+v, %v", res, err)
	}
	s := res.Stdout
	f := strings.Fields(s[strings.LastIndexByte(s, ')')+1:])
	if len(f) < 13 {
		t.Fatalf("stat %q", s)
	}
	ut, _ := strconv.ParseInt(f[11], 10, 64)
	st, _ := strconv.ParseInt(f[12], 10, 64)
	return time.Duration(ut+st) * time.Second / 100
}
