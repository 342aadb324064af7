package main

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/runner-dev/runner/internal/cli"
	"github.com/runner-dev/runner/internal/dockertest"
	"github.com/runner-dev/runner/internal/fakellm"
	"github.com/runner-dev/runner/sandbox"
)

// signalPending reports whether sig is still pending for process pid (for
// the process or one of its threads): not yet taken by its handler.
func signalPending(t *testing.T, pid int, sig syscall.Signal) bool {
	t.Helper()
	bit := uint64(1) << (sig - 1)
	files, _ := filepath.Glob(fmt.Sprintf("/proc/%d/task/*/status", pid))
	files = append(files, fmt.Sprintf("/proc/%d/status", pid))
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			continue // the thread is gone
		}
		for _, line := range strings.Split(string(b), "\n") {
			k, v, ok := strings.Cut(line, ":")
			if !ok || k != "SigPnd" && k != "ShdPnd" {
				continue
			}
			mask, err := strconv.ParseUint(strings.TrimSpace(v), 16, 64)
			if err == nil && mask&bit != 0 {
				return true
			}
		}
	}
	return false
}

// containersOf lists, with the docker CLI, the sandbox containers (running
// or not) owned by process pid; safe to call from any goroutine.
func containersOf(pid int) ([]string, error) {
	out, err := exec.Command("docker", "ps", "-a", "--filter", "label=dev.runner.owner.pid="+strconv.Itoa(pid),
		"--format", "{{.Names}}").CombinedOutput()
	if err != nil {
		return nil, fmt.Errorf("docker ps: %v: %s", err, out)
	}
	return strings.Fields(string(out)), nil
}

// A second Ctrl-C exits at once, leaving the run's sandbox behind, and says
// how to remove it; the next run on the same out directory removes it
// before it starts anything.
func TestRunSecondInterrupt(t *testing.T) {
	repo, head := sourceRepo(t, map[string]string{"f.txt": "0\n"})
	var resumed atomic.Bool
	var firstPID atomic.Int64
	var mu sync.Mutex
	var leftAtResume []string
	var psErr error
	srv := fakellm.New(t)
	srv.Forever(fakellm.Func(func(r fakellm.Request) fakellm.Turn {
		if !resumed.Load() {
			return fakellm.ToolCall("run_command", `{"command":"sleep 600"}`).WithUsage(100, 10, 0)
		}
		mu.Lock()
		defer mu.Unlock()
		if leftAtResume == nil && psErr == nil {
			leftAtResume, psErr = containersOf(int(firstPID.Load()))
			if leftAtResume == nil {
				leftAtResume = []string{}
			}
		}
		return complete("Slept enough.").WithUsage(100, 10, 0)
	}))
	file := writeTaskFile(t, fmt.Sprintf("tasks:\n  - {id: sleeper, repo: %s, prompt: \"Sleep.\", image: %s}\n",
		repo, dockertest.Busybox(t)))
	out := filepath.Join(t.TempDir(), "out")

	cmd := runnerCmd(t, srv, "run", file, "--out", out)
	var stderr strings.Builder
	cmd.Stderr = &stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	pid := cmd.Process.Pid
	firstPID.Store(int64(pid))
	waitUntil(t, time.Minute, "the agent's command to run in the sandbox", func() bool {
		names := runnerContainers(t, false, pid)
		if len(names) == 0 {
			return false
		}
		name, _, _ := strings.Cut(names[0], "_")
		top, _ := exec.Command("docker", "top", name).CombinedOutput()
		return strings.Contains(string(top), "sleep 600")
	})
	cmd.Process.Signal(syscall.SIGINT)
	waitUntil(t, time.Minute, "the first SIGINT to reach runner", func() bool { return !signalPending(t, pid, syscall.SIGINT) })
	cmd.Process.Signal(syscall.SIGINT)
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	select {
	case <-done:
	case <-time.After(time.Minute):
		cmd.Process.Kill()
		t.Fatalf("runner still running a minute after the second SIGINT:\n%s", stderr.String())
	}
	if code := cmd.ProcessState.ExitCode(); code != cli.ExitInterrupted {
		t.Errorf("exit code %d, want %d\n%s", code, cli.ExitInterrupted, stderr.String())
	}
	for _, want := range []string{"remove them with `runner cleanup`", "or run again with --out " + out + ", which removes them first"} {
		if !strings.Contains(stderr.String(), want) {
			t.Errorf("stderr after the second SIGINT lacks %q:\n%s", want, stderr.String())
		}
	}
	if left := runnerContainers(t, true, pid); len(left) == 0 {
		t.Fatalf("no sandbox left after the second SIGINT: the test did not interrupt the clean-up")
	}

	resumed.Store(true)
	res, pid2 := runRunner(t, srv, "run", file, "--out", out)
	if res.code != cli.ExitOK {
		t.Fatalf("the next run: %s", res)
	}
	mu.Lock()
	if psErr != nil || len(leftAtResume) != 0 {
		t.Errorf("when the next run called the model, the first run's sandboxes were %v (%v)", leftAtResume, psErr)
	}
	mu.Unlock()
	if !strings.Contains(res.stdout, "removed 1 sandbox container(s)") {
		t.Errorf("the next run did not say it removed the sandbox:\n%s", res)
	}
	userRepoUnchanged(t, repo, head)
	noLeftovers(t, pid, pid2)
}

// A run removes the sandboxes of the earlier runs on its out directory even
// when their owner looks alive (on another host, or in another PID
// namespace): holding the out directory, it knows those runs are over.
// Sandboxes of other out directories are left alone.
func TestRunRemovesSandboxesOfEarlierRunsOnItsOut(t *testing.T) {
	elsewhere := sandbox.Owner{Host: "another-host.invalid", PID: 1}
	earlier := startTestSandbox(t, "earlier-run", elsewhere)
	other := startTestSandbox(t, "other-out", elsewhere)
	out := filepath.Join(t.TempDir(), "out")
	if err := os.MkdirAll(filepath.Join(out, "runs"), 0o755); err != nil {
		t.Fatal(err)
	}
	writeFile(t, filepath.Join(out, "runs", dockertest.RunID+"-earlier-run"), "")

	repo, _ := sourceRepo(t, map[string]string{"a.txt": "a\n"})
	srv, _ := modelServer(t, map[string][]fakellm.Turn{"Look": {complete("Looked.")}})
	file := writeTaskFile(t, fmt.Sprintf("tasks:\n  - {id: look, repo: %s, prompt: \"Look around.\", image: %s}\n",
		repo, dockertest.Busybox(t)))
	res, pid := runRunner(t, srv, "run", file, "--out", out)
	if res.code != cli.ExitOK {
		t.Fatalf("runner run: %s", res)
	}
	if exists, _ := containerRunning(t, earlier.ID()); exists {
		t.Errorf("the sandbox of the earlier run on %s is still there", out)
	}
	if exists, running := containerRunning(t, other.ID()); !exists || !running {
		t.Errorf("the sandbox of a run on another out directory was touched (exists %v, running %v)", exists, running)
	}
	if entries, _ := os.ReadDir(filepath.Join(out, "runs")); len(entries) != 0 {
		t.Errorf("%s/runs still lists %v", out, entries)
	}
	noLeftovers(t, pid)
}
