package hostcpu

import (
	"os"
	"os/exec"
	"testing"
)

func TestClassify(t *testing.T) {
	procs := map[int]proc{
		1:   {comm: "init", ppid: 0},
		10:  {comm: "dockerd", ppid: 1},
		11:  {comm: "containerd", ppid: 10},
		20:  {comm: "containerd-shim", ppid: 1},
		21:  {comm: "runc", ppid: 20},
		22:  {comm: "runc:[1:CHILD]", ppid: 21},
		23:  {comm: "sleep", ppid: 20},
		24:  {comm: "sh", ppid: 21}, // an exec's command, its runc not yet gone
		25:  {comm: "cat", ppid: 24},
		26:  {comm: "runc-lookalike", ppid: 24}, // named like runc, inside the container
		30:  {comm: "bench.test", ppid: 1},
		31:  {comm: "git", ppid: 30},
		40:  {comm: "bash", ppid: 1},
		41:  {comm: "ls", ppid: 40},
		50:  {comm: "fusermount3", ppid: 10},
		60:  {comm: "orphan", ppid: 99}, // parent gone, never seen
		100: {comm: "containerd-shim", ppid: 11},
		200: {comm: "containerd-shim", ppid: 1}, // a container that ran before (StartNew)
		201: {comm: "runc", ppid: 200},
		202: {comm: "sh", ppid: 200},
		300: {comm: "fuse-overlayfs", ppid: 1},
		301: {comm: "fuse-overlayfs", ppid: 1}, // a container that ran before
	}
	c := &classifier{self: 30, ignore: map[int]bool{200: true, 301: true}, memo: map[int]kind{}, lookup: func(pid int) (proc, bool) {
		p, ok := procs[pid]
		return p, ok
	}}
	want := map[int]kind{
		1: kindOther, 10: kindEngine, 11: kindEngine, 20: kindShim, 21: kindRuntime, 22: kindRuntime,
		23: kindSandbox, 24: kindSandbox, 25: kindSandbox, 26: kindSandbox, 30: kindRunner, 31: kindRunner,
		40: kindOther, 41: kindOther, 50: kindEngine, 60: kindUnknown, 100: kindShim,
		200: kindOther, 201: kindOther, 202: kindOther, 300: kindEngine, 301: kindOther,
	}
	for pid, k := range want {
		if got := c.kindOf(pid, procs[pid]); got != k {
			t.Errorf("%d (%s): kind %d, want %d", pid, procs[pid].comm, got, k)
		}
	}
}

// A child that burns CPU and exits between Start and Stop is runner's
// (the children it waited for), whole; the meter reads exit records.
func TestMeterCountsWaitedChild(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("the exit records need root")
	}
	m, err := Start()
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command("sh", "-c", "i=0; while [ $i -lt 300000 ]; do i=$((i+1)); done")
	if err := cmd.Run(); err != nil {
		m.Stop()
		t.Fatal(err)
	}
	u, err := m.Stop()
	if err != nil {
		t.Fatal(err)
	}
	child := cmd.ProcessState.UserTime() + cmd.ProcessState.SystemTime()
	t.Logf("child %v, usage %+v", child, u)
	if u.Runner < child {
		t.Errorf("runner %v, less than its child's %v", u.Runner, child)
	}
	if u.Exits == 0 {
		t.Error("no exit record read, though the child exited")
	}
}
