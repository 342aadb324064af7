package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/runner-dev/runner/internal/cli"
	"github.com/runner-dev/runner/internal/dockertest"
	"github.com/runner-dev/runner/internal/fakellm"
	"github.com/runner-dev/runner/tasks"
)

// containersCreated lists, from the engine's events, the containers the
// runner process pid created between since and until: even those removed
// since, which docker ps no longer shows.
func containersCreated(t *testing.T, pid int, since, until time.Time) []string {
	t.Helper()
	stamp := func(at time.Time) string { return strconv.FormatFloat(float64(at.UnixNano())/1e9, 'f', 3, 64) }
	out, err := exec.Command("docker", "events", "--since", stamp(since), "--until", stamp(until.Add(time.Second)),
		"--filter", "type=container", "--filter", "event=create",
		"--filter", "label=dev.runner.owner.pid="+strconv.Itoa(pid), "--format", "{{.Actor.Attributes.name}}").CombinedOutput()
	if err != nil {
		t.Fatalf("docker events: %v: %s", err, out)
	}
	return strings.Fields(string(out))
}

// Before any sandbox starts, an endpoint that cannot be called — no key
// for a remote endpoint, a refused key, a server that does not answer —
// ends the run at once with exit code 2 and one line naming the endpoint
// (without credentials) and what to set; no container is created and no
// model call made.
func TestPreflightRefusesAnEndpointThatCannotBeCalled(t *testing.T) {
	repo, head := sourceRepo(t, map[string]string{"a.txt": "a\n"})
	file := writeTaskFile(t, fmt.Sprintf(`
tasks: [{id: pre, repo: %s, prompt: "Change a.", image: %s}]
`, repo, dockertest.Busybox(t)))
	tests := []struct {
		name  string
		setup func(*fakellm.Server) []string // returns extra environment
		want  func(*fakellm.Server) string
	}{
		{
			name: "no key for a remote endpoint",
			setup: func(*fakellm.Server) []string {
				return []string{"OPENAI_API_KEY=", "OPENAI_BASE_URL=https://user:hunter2secret@models.example.invalid/v1?api-key=querysecret"}
			},
			want: func(*fakellm.Server) string {
				return "no API key for the model endpoint https://models.example.invalid/v1: OPENAI_API_KEY is not set"
			},
		},
		{
			name: "key in another variable, unset",
			setup: func(*fakellm.Server) []string {
				return []string{"OPENAI_BASE_URL=https://models.example.invalid/v1", "RUNNER_TEST_NO_KEY="}
			},
			want: func(*fakellm.Server) string { return "RUNNER_TEST_NO_KEY is not set" },
		},
		{
			name: "key refused",
			setup: func(s *fakellm.Server) []string {
				s.RequireKey("sk-the-right-key-0123456789")
				return nil
			},
			want: func(s *fakellm.Server) string {
				return "the model endpoint " + s.URL() + " refused the API key in OPENAI_API_KEY (401 Unauthorized, invalid_api_key)"
			},
		},
		{
			name: "server down",
			setup: func(s *fakellm.Server) []string {
				s.Down()
				return nil
			},
			want: func(s *fakellm.Server) string {
				return "the model endpoint " + s.URL() + " does not answer: dial tcp " + strings.TrimPrefix(strings.TrimSuffix(s.URL(), "/v1"), "http://") + ": connect: connection refused"
			},
		},
		{
			name: "gateway says unavailable",
			setup: func(s *fakellm.Server) []string {
				s.Models(fakellm.ServerError(503))
				return nil
			},
			want: func(s *fakellm.Server) string {
				return "the model endpoint " + s.URL() + " does not answer: 503 Service Unavailable"
			},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			srv := fakellm.New(t)
			env := tt.setup(srv)
			out := filepath.Join(t.TempDir(), "out")
			args := []string{"run", file, "--out", out}
			if tt.name == "key in another variable, unset" {
				args = append(args, "--api-key-env", "RUNNER_TEST_NO_KEY")
			}
			cmd := runnerCmd(t, srv, args...)
			cmd.Env = append(cmd.Env, env...)
			var stdout, stderr bytes.Buffer
			cmd.Stdout, cmd.Stderr = &stdout, &stderr
			start := time.Now()
			cmd.Run()
			took := time.Since(start)
			if code := cmd.ProcessState.ExitCode(); code != cli.ExitUsage {
				t.Fatalf("exit code %d, want 2\nstderr:\n%s", code, stderr.String())
			}
			lines := strings.Split(strings.TrimSpace(stderr.String()), "\n")
			if len(lines) != 1 || !strings.HasPrefix(lines[0], "runner: ") || !strings.Contains(lines[0], tt.want(srv)) {
				t.Errorf("stderr = %q\nwant one line containing %q", stderr.String(), tt.want(srv))
			}
			for _, secret := range []string{e2eKey, "hunter2secret", "querysecret"} {
				if strings.Contains(stderr.String()+stdout.String(), secret) {
					t.Errorf("the output shows %q", secret)
				}
			}
			// Today's retries took ~46 s per task; the preflight takes one
			// request. The bound leaves room for a loaded machine.
			if took > 10*time.Second {
				t.Errorf("the run took %s to refuse the endpoint", took)
			}
			if created := containersCreated(t, cmd.Process.Pid, start, time.Now()); len(created) > 0 {
				t.Errorf("containers were created: %q", created)
			}
			if n := len(srv.Requests()); n != 0 {
				t.Errorf("%d chat requests were made", n)
			}
			if _, err := os.Stat(filepath.Join(out, "results.jsonl")); err == nil {
				if rs := readResultLines(t, out); len(rs) > 0 {
					t.Errorf("results were recorded: %+v", rs)
				}
			}
			userRepoUnchanged(t, repo, head)
		})
	}
}

// A model played back from a recorded trajectory calls no endpoint: with
// no key and no server, the run does not stop at the preflight.
func TestReplayNeedsNoEndpoint(t *testing.T) {
	repo, head := sourceRepo(t, map[string]string{"a.txt": "a\n"})
	srv, _ := modelServer(t, map[string][]fakellm.Turn{
		"Record": {edit("a.txt", "a", "b"), complete("Changed a.")},
	})
	file := writeTaskFile(t, fmt.Sprintf(`
tasks: [{id: rec, repo: %s, prompt: "Record a change.", image: %s}]
`, repo, dockertest.Busybox(t)))
	out := filepath.Join(t.TempDir(), "out")
	start := time.Now()
	res, pid := runRunner(t, srv, "run", file, "--out", out)
	if res.code != cli.ExitOK {
		t.Fatalf("recording run: %s", res)
	}
	// The engine's events show the sandbox of a run that made one: the
	// preflight test's "none created" can fail.
	if created := containersCreated(t, pid, start, time.Now()); len(created) != 1 {
		t.Errorf("containers created by the recording run: %q, want one", created)
	}
	srv.Down()
	replay := writeTaskFile(t, fmt.Sprintf(`
tasks: [{id: play, repo: %s, prompt: "Record a change.", image: %s, model: "replay:%s"}]
`, repo, dockertest.Busybox(t), filepath.Join(out, "trajectories", "rec.1.jsonl")))
	cmd := runnerCmd(t, srv, "run", replay, "--out", filepath.Join(t.TempDir(), "out2"))
	cmd.Env = append(cmd.Env, "OPENAI_API_KEY=", "OPENAI_BASE_URL=https://models.example.invalid/v1")
	b, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("replay run: %v\n%s", err, b)
	}
	if got := gitCLI(t, repo, "show", "agent/play:a.txt"); got != "b" {
		t.Errorf("a.txt on the replayed branch = %q", got)
	}
	userRepoUnchanged(t, repo, head)
}

// lockedBuffer is a bytes.Buffer that a process writes while a test reads.
type lockedBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *lockedBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *lockedBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}

// batchOf writes a task file of n small tasks on one repository, job01 to
// jobNN, and the scripts that play them: each writes steps files, then
// completes.
func batchOf(t *testing.T, repo string, n, steps int, delay time.Duration) (file string, scripts map[string][]fakellm.Turn) {
	t.Helper()
	var b strings.Builder
	fmt.Fprintf(&b, "defaults: {image: %s}\ntasks:\n", dockertest.Busybox(t))
	scripts = map[string][]fakellm.Turn{}
	for i := 1; i <= n; i++ {
		id := fmt.Sprintf("job%02d", i)
		fmt.Fprintf(&b, "  - {id: %s, repo: %s, prompt: \"Write the files of %s.\"}\n", id, repo, id)
		var turns []fakellm.Turn
		for s := 1; s <= steps; s++ {
			turns = append(turns, fakellm.ToolCall("write_file",
				fmt.Sprintf(`{"path":"%s-%d.txt","content":"%s step %d\n"}`, id, s, id, s)).WithDelay(delay))
		}
		scripts[" "+id+"."] = append(turns, complete("Wrote the files of "+id+".").WithDelay(delay))
	}
	return writeTaskFile(t, b.String()), scripts
}

// finishedTasks counts the progress lines of tasks that ended.
func finishedTasks(stderr string) int {
	n := 0
	for _, line := range strings.Split(stderr, "\n") {
		if strings.HasPrefix(line, "+ ") || strings.HasPrefix(line, "x ") {
			n++
		}
	}
	return n
}

// runningTasks lists the tasks that started and have not ended, from the
// progress lines.
func runningTasks(stderr string) []string {
	var ids []string
	for _, line := range strings.Split(stderr, "\n") {
		if id, ok := strings.CutPrefix(line, "> "); ok {
			ids = append(ids, strings.SplitN(id, ":", 2)[0])
		}
	}
	return slices.DeleteFunc(ids, func(id string) bool {
		return strings.Contains(stderr, "+ "+id+":") || strings.Contains(stderr, "x "+id+":")
	})
}

// The model endpoint goes down in the middle of a 20-task batch and comes
// back: the run says so on stderr, starts no task while it is down, holds
// the running tasks' model calls (their trajectories mark the wait), and
// every task succeeds.
func TestEndpointOutageMidBatch(t *testing.T) {
	repo, head := sourceRepo(t, map[string]string{"README.md": "# batch\n"})
	file, scripts := batchOf(t, repo, 20, 1, 0)
	srv, script := modelServer(t, scripts)
	out := filepath.Join(t.TempDir(), "out")
	cmd := runnerCmd(t, srv, "run", file, "--out", out, "--concurrency", "4", "--max-retries", "1")
	var stdout, stderr lockedBuffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	waitUntil(t, 3*time.Minute, "5 tasks to finish", func() bool { return finishedTasks(stderr.String()) >= 5 })
	srv.Down()
	waitUntil(t, 2*time.Minute, "the outage to be reported", func() bool {
		return strings.Contains(stderr.String(), "is unavailable")
	})
	// The endpoint stays down until every running task waits for it.
	waitUntil(t, 2*time.Minute, "the running tasks to wait", func() bool {
		running := runningTasks(stderr.String())
		for _, id := range running {
			b, _ := os.ReadFile(filepath.Join(out, "trajectories", id+".1.jsonl"))
			if !strings.Contains(string(b), `"type":"endpoint"`) {
				return false
			}
		}
		return len(running) > 0
	})
	srv.Up()
	if err := waitExit(cmd, 5*time.Minute); err != nil {
		t.Fatalf("%v\n%s", err, stderr.String())
	}
	log := stderr.String()
	if code := cmd.ProcessState.ExitCode(); code != cli.ExitOK {
		t.Fatalf("exit code %d, want 0\nstdout:\n%s\nstderr:\n%s", code, stdout.String(), log)
	}
	rs := readResultLines(t, out)
	if len(rs) != 20 {
		t.Errorf("%d results, want 20", len(rs))
	}
	for _, r := range rs {
		if r.Status != tasks.StatusSucceeded || r.Attempt != 1 {
			t.Errorf("%s: %s (attempt %d): %s", r.ID, r.Status, r.Attempt, r.Error)
		}
	}
	script.left(t)
	down := strings.Index(log, "is unavailable")
	up := strings.Index(log, "answers again after")
	if down < 0 || up < down {
		t.Fatalf("stderr does not report the outage, then the endpoint answering again:\n%s", log)
	}
	if !strings.Contains(log, "warning: model endpoint "+srv.URL()+" is unavailable") {
		t.Errorf("the outage message does not name the endpoint:\n%s", log)
	}
	for _, line := range strings.Split(log[down:up], "\n") {
		if strings.HasPrefix(line, "> ") {
			t.Errorf("a task started while the endpoint was down: %q", line)
		}
	}
	held := 0
	for _, r := range rs {
		b, _ := os.ReadFile(filepath.Join(out, "trajectories", r.ID+".1.jsonl"))
		if strings.Contains(string(b), `"type":"endpoint"`) {
			held++
		}
	}
	if held == 0 {
		t.Errorf("no trajectory marks a call held by the outage")
	}

	userRepoUnchanged(t, repo, head)
	noLeftovers(t, cmd.Process.Pid)
}

// A storm of 429s lowers the number of model calls made at once, which the
// server measures, and no task fails.
func TestRateLimitStormLowersConcurrency(t *testing.T) {
	repo, head := sourceRepo(t, map[string]string{"README.md": "# storm\n"})
	file, scripts := batchOf(t, repo, 10, 3, time.Second)
	srv, script := modelServer(t, scripts)
	out := filepath.Join(t.TempDir(), "out")
	cmd := runnerCmd(t, srv, "run", file, "--out", out, "--concurrency", "4")
	var stdout, stderr lockedBuffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	// Before the storm, the slow calls of several tasks overlap.
	waitUntil(t, 3*time.Minute, "3 calls at once", func() bool { return srv.Peak() >= 3 })
	before := srv.Peak()
	srv.Disrupt(2, fakellm.RateLimited("").WithHeader("Retry-After-Ms", "100"))
	waitUntil(t, 2*time.Minute, "the runner to lower its calls at once", func() bool {
		return strings.Contains(stderr.String(), "is rate-limiting: at most 2 model calls at once")
	})
	srv.ResetPeak()
	storm := srv.Disrupted()
	waitUntil(t, 3*time.Minute, "ten more 429s", func() bool { return srv.Disrupted() >= storm+10 })
	during := srv.Peak()
	srv.Calm()
	if err := waitExit(cmd, 5*time.Minute); err != nil {
		t.Fatalf("%v\n%s", err, stderr.String())
	}
	log := stderr.String()
	if code := cmd.ProcessState.ExitCode(); code != cli.ExitOK {
		t.Fatalf("exit code %d, want 0\nstderr:\n%s", code, log)
	}
	if n := strings.Count(log, "is rate-limiting: at most 1 model call at once"); n > 1 {
		t.Errorf("the lowest limit is reported %d times, want once:\n%s", n, log)
	}
	if during > 2 {
		t.Errorf("%d calls at once during the storm (%d before it), want at most 2", during, before)
	}
	rs := readResultLines(t, out)
	for _, r := range rs {
		if r.Status != tasks.StatusSucceeded {
			t.Errorf("%s: %s: %s", r.ID, r.Status, r.Error)
		}
	}
	if len(rs) != 10 {
		t.Errorf("%d results, want 10", len(rs))
	}
	script.left(t)
	userRepoUnchanged(t, repo, head)
	noLeftovers(t, cmd.Process.Pid)
}

// runner validate checks the endpoint only when asked, with the same
// one-line verdict as the preflight of runner run.
func TestValidateChecksEndpointOnDemand(t *testing.T) {
	srv := fakellm.New(t)
	srv.RequireKey(e2eKey)
	t.Setenv("OPENAI_API_KEY", e2eKey)
	t.Setenv("OPENAI_BASE_URL", "")

	res := runMain(t, "validate", exampleYAML, "--base-url", srv.URL())
	if res.code != cli.ExitOK || strings.Contains(res.stdout, "endpoint") || srv.ModelListRequests() != 0 {
		t.Fatalf("validate without --check-endpoint asked the endpoint: %s", res)
	}
	res = runMain(t, "validate", exampleYAML, "--check-endpoint", "--base-url", srv.URL())
	if res.code != cli.ExitOK || !strings.Contains(res.stdout, "model endpoint "+srv.URL()+" answers") {
		t.Errorf("validate --check-endpoint: %s", res)
	}
	t.Setenv("OPENAI_API_KEY", "sk-wrong-key-0123456789")
	t.Setenv("OPENAI_BASE_URL", srv.URL())
	res = runMain(t, "--json", "validate", exampleYAML, "--check-endpoint")
	var doc struct {
		OK       bool
		Endpoint struct {
			URL, Error string
			OK         bool
		}
	}
	if err := json.Unmarshal([]byte(res.stdout), &doc); err != nil {
		t.Fatalf("--json output: %v\n%s", err, res)
	}
	if res.code != cli.ExitUsage || doc.OK || doc.Endpoint.OK || doc.Endpoint.URL != srv.URL() ||
		!strings.Contains(doc.Endpoint.Error, "refused the API key in OPENAI_API_KEY (401 Unauthorized, invalid_api_key)") {
		t.Errorf("validate --check-endpoint with a refused key: %+v\n%s", doc, res)
	}
	srv.Down()
	res = runMain(t, "validate", exampleYAML, "--check-endpoint")
	if res.code != cli.ExitUsage || !strings.Contains(res.stderr, "runner: the model endpoint "+srv.URL()+" does not answer") {
		t.Errorf("validate --check-endpoint of a server that is down: %s", res)
	}
	if n := len(srv.Requests()); n != 0 {
		t.Errorf("%d chat requests", n)
	}
}
