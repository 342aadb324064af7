package docker_test

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/runner-dev/runner/internal/dockertest"
	"github.com/runner-dev/runner/sandbox"
)

// The sandbox under attack: what a model talked into anything by the
// repository it reads would try first. Each attempt must fail inside the
// container, quickly, and leave the host alone.

// suidProgram prints the effective uid it runs with.
const suidProgram = `#include <stdio.h>
#include <unistd.h>
int main(void) { printf("euid=%d\n", (int)geteuid()); return 0; }
`

// suidImage is the busybox image plus a set-uid-root program.
func suidImage(t *testing.T) string {
	t.Helper()
	dir := t.TempDir()
	src := filepath.Join(dir, "euid.c")
	os.WriteFile(src, []byte(suidProgram), 0o644)
	bin := filepath.Join(dir, "euid")
	if out, err := exec.Command("gcc", "-static", "-O2", "-o", bin, src).CombinedOutput(); err != nil {
		t.Fatalf("compile the set-uid test program (gcc is needed): %v\n%s", err, out)
	}
	body, err := os.ReadFile(bin)
	if err != nil {
		t.Fatal(err)
	}
	return dockertest.BusyboxWith(t, dockertest.File{Name: "usr/local/bin/euid", Mode: 0o4755, Body: body})
}

func TestPrivilegeEscalationFails(t *testing.T) {
	image := suidImage(t)
	// The control: without no-new-privileges the program does become root,
	// so the test below shows the sandbox's setting at work.
	out, err := exec.Command("docker", "run", "--rm", "-u", "1000:1000", image, "/usr/local/bin/euid").CombinedOutput()
	if err != nil || strings.TrimSpace(string(out)) != "euid=0" {
		t.Fatalf("control run of the set-uid program: %q, %v; want euid=0", out, err)
	}
	sb := start(t, sandbox.Config{Image: image})
	tests := []struct {
		name, cmd string
		wantOut   string // a successful escalation would not print this
	}{
		{"set-uid binary", "ls -l /usr/local/bin/euid >&2; /usr/local/bin/euid", "euid=1000"},
		{"mount", "mkdir -p /tmp/m && mount -t tmpfs none /tmp/m && echo MOUNTED", ""},
		{"remount of /proc", "mount -o remount,rw /proc && echo MOUNTED", ""},
		{"user namespace", "unshare -r id -u && echo UNSHARED", ""},
		{"mount namespace", "unshare -m true && echo UNSHARED", ""},
		{"raw socket", "ping -c 1 -W 1 127.0.0.1 >/dev/null 2>&1 && echo RAW; arping -c1 -I lo 127.0.0.1 >/dev/null 2>&1 && echo RAW; true", ""},
		{"chown to root", "touch f && chown 0:0 f && echo CHOWNED", ""},
		{"write /etc", "echo x >> /etc/passwd && echo WROTE", ""},
		{"read /etc/shadow-like files", "cat /proc/1/environ >/dev/null 2>&1; cat /root/.profile 2>/dev/null && echo READ", ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			res := run(t, sb, tt.cmd, sandbox.ExecOptions{Timeout: 20 * time.Second})
			got := strings.TrimSpace(res.Stdout)
			if got != tt.wantOut {
				t.Errorf("stdout = %q, want %q (exit %d, stderr %q)", got, tt.wantOut, res.ExitCode, res.Stderr)
			}
		})
	}
	if got := output(t, sb, "id -u; grep -c . /proc/self/status >/dev/null; grep CapEff /proc/self/status"); !strings.Contains(got, "1000") || !strings.Contains(got, "0000000000000000") {
		t.Errorf("identity after the attempts: %q", got)
	}
}

// Interactive programs find no terminal and no input, and return promptly.
func TestInteractiveTrapsReturn(t *testing.T) {
	sb := start(t, sandbox.Config{Image: dockertest.SandboxImage(t)})
	output(t, sb, `git init -q . && for i in $(seq 1 300); do echo "line $i" >> log.txt; done && git add -A && git -c user.name=a -c user.email=a@b commit -qm one`)
	traps := map[string]string{
		"stdin read":      "read line; echo got:$line",
		"cat stdin":       "cat",
		"python input":    `python3 -c "input('name? ')"`,
		"password prompt": `python3 -c "import getpass; getpass.getpass()"`,
		"pager":           "git log -p && less log.txt && more log.txt",
		"editor":          "git commit --allow-empty",
		"git credentials": "git ls-remote https://127.0.0.1:9/x.git",
		"ssh host key":    "ssh -p 9 git@127.0.0.1 true",
		"sudo":            "sudo true",
	}
	for name, cmd := range traps {
		t.Run(name, func(t *testing.T) {
			begin := time.Now()
			res := run(t, sb, cmd, sandbox.ExecOptions{Timeout: 30 * time.Second})
			if took := time.Since(begin); took > 10*time.Second || res.TimedOut {
				t.Errorf("%q took %s (timed out %v): it waited for input\n%s", cmd, took, res.TimedOut, res.Output)
			}
		})
	}
}

// A disk filler gets ENOSPC everywhere it can write, and the host's disk
// does not fill: it tries 800 MB in all; the host may lose a little to
// whatever else runs on it meanwhile, never that.
func TestDiskFillerGetsENOSPC(t *testing.T) {
	sb := start(t, sandbox.Config{Disk: 32 << 20, Memory: 512 << 20})
	root, err := exec.Command("docker", "info", "--format", "{{.DockerRootDir}}").Output()
	if err != nil {
		t.Fatal(err)
	}
	before := freeBytes(t, strings.TrimSpace(string(root)))
	for _, dir := range []string{"/workspace", "/tmp", "/var/tmp", "$HOME"} {
		res := run(t, sb, "dd if=/dev/zero of="+dir+"/fill bs=1M count=200 2>&1; rm -f "+dir+"/fill", sandbox.ExecOptions{Timeout: time.Minute})
		if !strings.Contains(res.Output, "No space left on device") {
			t.Errorf("filling %s: %q; want ENOSPC", dir, res.Output)
		}
	}
	for _, dir := range []string{"/", "/etc", "/usr", "/var"} {
		res := run(t, sb, "echo x > "+dir+"/fill 2>&1", sandbox.ExecOptions{})
		if res.ExitCode == 0 {
			t.Errorf("writing to %s succeeded; want a read-only file system", dir)
		}
	}
	if after := freeBytes(t, strings.TrimSpace(string(root))); before-after > 100<<20 {
		t.Errorf("the host's free space in %s fell by %d MiB", root, (before-after)>>20)
	}
	if got := output(t, sb, "echo ok > /workspace/small && cat /workspace/small"); got != "ok" {
		t.Errorf("the workspace is unusable after the filler: %q", got)
	}
}

func freeBytes(t *testing.T, dir string) int64 {
	var st syscall.Statfs_t
	if err := syscall.Statfs(dir, &st); err != nil {
		t.Fatalf("statfs %s: %v", dir, err)
	}
	return int64(st.Bavail) * st.Bsize
}

// A workspace larger than the disk limit is refused at the start, with the
// limit named and what to change, and no sandbox is left.
func TestWorkspaceOverDiskLimit(t *testing.T) {
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "big"), make([]byte, 3<<20), 0o644); err != nil {
		t.Fatal(err)
	}
	e := dockertest.Engine(t)
	sb, err := e.StartContainer(context.Background(), sandbox.Config{Image: dockertest.Busybox(t), Workspace: dir, Disk: 2 << 20, RunID: dockertest.RunID, TaskID: "over-disk"})
	if err == nil {
		sb.Close(context.Background())
		t.Fatal("Start succeeded with a 3 MiB workspace and a 2 MiB disk limit")

	}
	for _, want := range []string{"no space left on device", "disk limit of 2 MiB", "limits.disk"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error %q does not say %q", err, want)
		}
	}
	list, err := e.List(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	for _, l := range list {
		if l.Run == dockertest.RunID && l.Task == "over-disk" {
			t.Errorf("container %s (%s) left behind by the failed start", l.Name, l.State)
		}
	}
}
