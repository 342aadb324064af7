package main

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/runner-dev/runner/internal/fakellm"
	"github.com/runner-dev/runner/tasks"
)

// The end-to-end tests run the built binary on task files, against the
// scripted model server and the real engine, and read what it leaves with
// the git CLI and the docker CLI.

const e2eKey = "sk-e2e-canary-key-0123456789"

// scriptByTask answers each task from its own script, found by a word of
// its prompt, so that tasks running at once do not take each other's turns.
type scriptByTask struct {
	mu      sync.Mutex
	scripts map[string][]fakellm.Turn
}

func (s *scriptByTask) turn() fakellm.Turn {
	return fakellm.Func(func(r fakellm.Request) fakellm.Turn {
		s.mu.Lock()
		defer s.mu.Unlock()
		task := ""
		if len(r.Messages) > 1 {
			task = r.Messages[1].Content
		}
		for key, turns := range s.scripts {
			if strings.Contains(task, key) {
				if len(turns) == 0 {
					return fakellm.Status(500, `{"error":{"message":"script of `+key+` is over"}}`)
				}
				s.scripts[key] = turns[1:]
				return turns[0].WithUsage(int64(len(r.Body)/4), 50, 0)
			}
		}
		return fakellm.Status(500, `{"error":{"message":"no script for this task"}}`)
	})
}

func (s *scriptByTask) left(t *testing.T) {
	t.Helper()
	s.mu.Lock()
	defer s.mu.Unlock()
	for key, turns := range s.scripts {
		if len(turns) > 0 {
			t.Errorf("script of %q has %d turns left", key, len(turns))
		}
	}
}

// modelServer starts the scripted server for the scripts.
func modelServer(t *testing.T, scripts map[string][]fakellm.Turn) (*fakellm.Server, *scriptByTask) {
	s := &scriptByTask{scripts: scripts}
	srv := fakellm.New(t)
	srv.Forever(s.turn())
	return srv, s
}

// runnerCmd prepares the binary with the model endpoint in its environment.
func runnerCmd(t *testing.T, srv *fakellm.Server, args ...string) *exec.Cmd {
	cmd := exec.Command(runnerBinary(t), args...)
	cmd.Env = append(os.Environ(), "OPENAI_BASE_URL="+srv.URL(), "OPENAI_API_KEY="+e2eKey, "RUNNER_MODEL=gpt-4o-mini",
		"NO_COLOR=1")
	return cmd
}

// runRunner runs the binary to its end; pid identifies its sandboxes.
func runRunner(t *testing.T, srv *fakellm.Server, args ...string) (res cmdResult, pid int) {
	t.Helper()
	cmd := runnerCmd(t, srv, args...)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	err := cmd.Run()
	res = cmdResult{stdout: stdout.String(), stderr: stderr.String()}
	var exit *exec.ExitError
	if errors.As(err, &exit) {
		res.code = exit.ExitCode()
	} else if err != nil {
		t.Fatal(err)
	}
	return res, cmd.Process.Pid
}

// sourceRepo makes a repository with files committed on main.
func sourceRepo(t *testing.T, files map[string]string) (dir, head string) {
	t.Helper()
	dir = filepath.Join(t.TempDir(), "repo")
	gitCLI(t, filepath.Dir(dir), "init", "-q", dir)
	for name, body := range files {
		os.MkdirAll(filepath.Dir(filepath.Join(dir, name)), 0o755)
		writeFile(t, filepath.Join(dir, name), body)
	}
	gitCLI(t, dir, "add", "-A")
	gitCLI(t, dir, "commit", "-q", "-m", "first")
	return dir, gitCLI(t, dir, "rev-parse", "HEAD")
}

func readResultLines(t *testing.T, out string) []tasks.Result {
	t.Helper()
	f, err := os.Open(filepath.Join(out, "results.jsonl"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var rs []tasks.Result
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		var r tasks.Result
		if err := json.Unmarshal(sc.Bytes(), &r); err != nil {
			t.Fatalf("results.jsonl line %q: %v", sc.Text(), err)
		}
		rs = append(rs, r)
	}
	return rs
}

func byID(rs []tasks.Result) map[string]tasks.Result {
	m := map[string]tasks.Result{}
	for _, r := range rs {
		m[r.ID] = r
	}
	return m
}

// noLeftovers fails when a sandbox container of the runner processes pids
// remains (other tests may run sandboxes of their own meanwhile).
func noLeftovers(t *testing.T, pids ...int) {
	t.Helper()
	if left := runnerContainers(t, true, pids...); len(left) > 0 {
		t.Errorf("docker ps -a lists containers of this test's runs after they ended:\n%s", strings.Join(left, "\n"))
	}
}

// runnerContainers lists the sandbox containers (all, or running only)
// owned by the runner processes pids, with the docker CLI.
func runnerContainers(t *testing.T, all bool, pids ...int) []string {
	t.Helper()
	var left []string
	for _, pid := range pids {
		args := []string{"ps", "--filter", "label=dev.runner.owner.pid=" + strconv.Itoa(pid), "--format", "{{.Names}} {{.Status}}"}
		if all {
			args = append(args, "-a")
		}
		out, err := exec.Command("docker", args...).CombinedOutput()
		if err != nil {
			t.Fatalf("docker ps: %v: %s", err, out)
		}
		left = append(left, strings.Fields(strings.ReplaceAll(string(out), " ", "_"))...)
	}
	return left
}

// userRepoUnchanged checks HEAD, worktree and index of the user's repo.
func userRepoUnchanged(t *testing.T, repo, head string) {
	t.Helper()
	if got := gitCLI(t, repo, "rev-parse", "HEAD"); got != head {
		t.Errorf("%s: HEAD moved from %s to %s", repo, head, got)
	}
	if got := gitCLI(t, repo, "status", "--porcelain"); got != "" {
		t.Errorf("%s: worktree or index changed:\n%s", repo, got)
	}
	if got := gitCLI(t, repo, "symbolic-ref", "HEAD"); got != "refs/heads/main" {
		t.Errorf("%s: HEAD now points at %s", repo, got)
	}
	gitCLI(t, repo, "fsck", "--strict")
}

func writeTaskFile(t *testing.T, content string) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), "tasks.yaml")
	writeFile(t, p, content)
	return p
}

func waitUntil(t *testing.T, limit time.Duration, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(limit)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(50 * time.Millisecond)
	}
}
