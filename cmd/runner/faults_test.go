package main

import (
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/runner-dev/runner/internal/cli"
	"github.com/runner-dev/runner/internal/dockertest"
	"github.com/runner-dev/runner/internal/fakellm"
	"github.com/runner-dev/runner/tasks"
)

// socketProxy forwards a unix socket to the Docker engine's, and can go
// down and come back: to the runner, a daemon that restarts.
type socketProxy struct {
	path, target string
	mu           sync.Mutex
	ln           net.Listener
	conns        []net.Conn
}

func newSocketProxy(t *testing.T) *socketProxy {
	target := "/var/run/docker.sock"
	if h := os.Getenv("DOCKER_HOST"); strings.HasPrefix(h, "unix://") {
		target = strings.TrimPrefix(h, "unix://")
	}
	p := &socketProxy{path: filepath.Join(t.TempDir(), "docker.sock"), target: target}
	p.up(t)
	t.Cleanup(p.down)
	return p
}

func (p *socketProxy) up(t *testing.T) {
	ln, err := net.Listen("unix", p.path)
	if err != nil {
		t.Fatal(err)
	}
	p.mu.Lock()
	p.ln = ln
	p.mu.Unlock()
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			d, err := net.Dial("unix", p.target)
			if err != nil {
				c.Close()
				continue
			}
			p.mu.Lock()
			p.conns = append(p.conns, c, d)
			p.mu.Unlock()
			go func() { io.Copy(d, c); d.Close() }()
			go func() { io.Copy(c, d); c.Close() }()
		}
	}()
}

// down closes the socket and every connection through it.
func (p *socketProxy) down() {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.ln != nil {
		p.ln.Close()
		p.ln = nil
	}
	for _, c := range p.conns {
		c.Close()
	}
	p.conns = nil
}

// The engine goes away in the middle of a command and comes back a few
// seconds later: the task ends with a clear sandbox_error, and its container
// is still removed.
func TestDaemonRestartMidTask(t *testing.T) {
	repo, head := sourceRepo(t, map[string]string{"a.txt": "a\n"})
	proxy := newSocketProxy(t)
	var once sync.Once
	srv, _ := modelServer(t, map[string][]fakellm.Turn{
		"restart": {fakellm.ToolCall("run_command", `{"command":"sleep 20"}`)},
	})
	file := writeTaskFile(t, fmt.Sprintf(`
tasks: [{id: restart, repo: %s, prompt: "Survive a restart.", image: %s}]
`, repo, dockertest.Busybox(t)))
	out := filepath.Join(t.TempDir(), "out")
	cmd := runnerCmd(t, srv, "run", file, "--out", out)
	cmd.Env = append(cmd.Env, "DOCKER_HOST=unix://"+proxy.path)
	var stderr strings.Builder
	cmd.Stderr = &stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	waitUntil(t, time.Minute, "the command to run", func() bool {
		return len(srv.Requests()) > 0 && len(runnerContainers(t, false, cmd.Process.Pid)) > 0
	})
	time.Sleep(time.Second)
	once.Do(proxy.down)
	time.Sleep(3 * time.Second)
	proxy.up(t)
	if err := waitExit(cmd, 2*time.Minute); err != nil {
		t.Fatalf("%v\n%s", err, stderr.String())
	}
	if code := cmd.ProcessState.ExitCode(); code != cli.ExitFailure {
		t.Errorf("exit code %d, want 1\n%s", code, stderr.String())
	}
	r := readResultLines(t, out)[0]
	if r.Status != tasks.StatusSandboxError || !strings.Contains(r.Error, "Docker daemon") {
		t.Errorf("result = %+v; want sandbox_error naming the daemon", r)
	}
	userRepoUnchanged(t, repo, head)
	noLeftovers(t, cmd.Process.Pid)
}

func waitExit(cmd *exec.Cmd, limit time.Duration) error {
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	select {
	case <-done:
		return nil
	case <-time.After(limit):
		cmd.Process.Kill()
		return fmt.Errorf("runner still running after %s", limit)
	}
}

// The container is killed from outside in the middle of a task: a clear
// status, quickly, and nothing left behind.
func TestContainerKilledMidTask(t *testing.T) {
	repo, head := sourceRepo(t, map[string]string{"a.txt": "a\n"})
	srv, _ := modelServer(t, map[string][]fakellm.Turn{
		"killed": {fakellm.ToolCall("run_command", `{"command":"sleep 60"}`)},
	})
	file := writeTaskFile(t, fmt.Sprintf(`
tasks: [{id: killed, repo: %s, prompt: "Get killed.", image: %s}]
`, repo, dockertest.Busybox(t)))
	out := filepath.Join(t.TempDir(), "out")
	cmd := runnerCmd(t, srv, "run", file, "--out", out)
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	var names []string
	waitUntil(t, time.Minute, "the command to run", func() bool {
		names = runnerContainers(t, false, cmd.Process.Pid)
		return len(srv.Requests()) > 0 && len(names) > 0
	})
	time.Sleep(time.Second)
	name := strings.SplitN(names[0], "_", 2)[0]
	if out, err := exec.Command("docker", "kill", name).CombinedOutput(); err != nil {
		t.Fatalf("docker kill: %v: %s", err, out)
	}
	if err := waitExit(cmd, time.Minute); err != nil {
		t.Fatal(err)
	}
	r := readResultLines(t, out)[0]
	if r.Status != tasks.StatusSandboxError || !strings.Contains(r.Error, "killed from outside") {
		t.Errorf("result = %+v", r)
	}
	userRepoUnchanged(t, repo, head)
	noLeftovers(t, cmd.Process.Pid)
}

// The model server misbehaves — 429 with Retry-After, a run of 5xx, a
// reset connection, a hung response, a success whose body is a proxy's
// page — and the tasks still succeed, with every retry in their trajectory.
func TestModelServerFaults(t *testing.T) {
	repo, _ := sourceRepo(t, map[string]string{"a.txt": "a\n"})
	srv := fakellm.New(t,
		fakellm.RateLimited("1"),
		fakellm.ServerError(500), fakellm.ServerError(502), fakellm.ServerError(503),
		fakellm.Reset(),
		fakellm.Hang(),
		edit("a.txt", "a", "b"),
		complete("Changed a."),
		fakellm.HTML(http.StatusOK, "<html>this is not an API</html>"),
		complete("Met garbage."),
	)
	file := writeTaskFile(t, fmt.Sprintf(`
tasks:
  - {id: flaky, repo: %s, prompt: "Change a.", image: %s}
  - {id: garbage, repo: %s, prompt: "Meet garbage.", image: %s}
`, repo, dockertest.Busybox(t), repo, dockertest.Busybox(t)))
	out := filepath.Join(t.TempDir(), "out")
	res, pid := runRunner(t, srv, "run", file, "--out", out, "--request-timeout", "2s")
	if res.code != cli.ExitOK {
		t.Fatalf("runner run: %s", res)
	}
	rs := byID(readResultLines(t, out))
	if rs["flaky"].Status != tasks.StatusSucceeded {
		t.Errorf("flaky = %+v", rs["flaky"])
	}
	if r := rs["garbage"]; r.Status != tasks.StatusSucceeded {
		t.Errorf("garbage = %+v", r)
	}
	traj, _ := os.ReadFile(filepath.Join(out, "trajectories", "flaky.1.jsonl"))
	if n := strings.Count(string(traj), `"type":"retry"`); n != 6 {
		t.Errorf("%d retry events in the trajectory, want 6", n)
	}
	traj, _ = os.ReadFile(filepath.Join(out, "trajectories", "garbage.1.jsonl"))
	if n := strings.Count(string(traj), `"type":"retry"`); n != 1 || !strings.Contains(string(traj), "malformed response") {
		t.Errorf("%d retry events in the garbage task's trajectory, want 1 naming the malformed response:\n%s", n, traj)
	}
	noLeftovers(t, pid)
}

// The out directory's disk fills up: the run says which results it could
// not write and exits non-zero; with space back, a rerun finishes the task
// once, and its branch is replaced, not duplicated.
func TestOutDirectoryFull(t *testing.T) {
	if os.Getuid() != 0 {
		t.Fatalf("this test mounts a small tmpfs and needs root (CI runs as root)")
	}
	repo, head := sourceRepo(t, map[string]string{"a.txt": "a\n"})
	out := filepath.Join(t.TempDir(), "out")
	os.MkdirAll(out, 0o755)
	if b, err := exec.Command("mount", "-t", "tmpfs", "-o", "size=128k", "tmpfs", out).CombinedOutput(); err != nil {
		t.Fatalf("mount a tmpfs: %v: %s", err, b)
	}
	t.Cleanup(func() { exec.Command("umount", out).Run() })
	srv, _ := modelServer(t, map[string][]fakellm.Turn{
		"Fill": {
			fakellm.ToolCall("run_command", `{"command":"head -c 60000 /dev/zero | tr '\\0' x"}`),
			edit("a.txt", "a", "b"),
			complete("Changed a."),
		},
		"Again": {edit("a.txt", "a", "b"), complete("Changed a again.")},
	})
	file := writeTaskFile(t, fmt.Sprintf(`
tasks: [{id: full, repo: %s, prompt: "Fill the disk.", image: %s}]
`, repo, dockertest.Busybox(t)))
	// Leave about 16 KB: the lock and the start marker fit, the trajectory
	// and the result do not.
	filler := filepath.Join(out, "filler")
	exec.Command("dd", "if=/dev/zero", "of="+filler, "bs=1k", "count=112").Run()
	res, pid := runRunner(t, srv, "run", file, "--out", out)
	if res.code != cli.ExitFailure || !strings.Contains(res.stderr, "could not be written") {
		t.Fatalf("runner run on a full disk: %s", res)
	}
	noLeftovers(t, pid)
	os.Remove(filler)
	file2 := writeTaskFile(t, fmt.Sprintf(`
tasks: [{id: full, repo: %s, prompt: "Again.", image: %s}]
`, repo, dockertest.Busybox(t)))
	res, pid = runRunner(t, srv, "run", file2, "--out", out)
	if res.code != cli.ExitOK {
		t.Fatalf("rerun with space: %s", res)
	}
	rs := readResultLines(t, out)
	if len(rs) != 1 || rs[0].Status != tasks.StatusSucceeded || rs[0].Attempt != 2 {
		t.Errorf("results = %+v; want one, of the second attempt", rs)
	}
	if got := gitCLI(t, repo, "log", "--format=%s", "agent/full"); strings.Count(got, "runner: full") != 1 {
		t.Errorf("branch history:\n%s", got)
	}
	userRepoUnchanged(t, repo, head)
	noLeftovers(t, pid)
}
