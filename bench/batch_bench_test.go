package bench

import (
	"bufio"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"testing"

	"github.com/runner-dev/runner/agent"
	"github.com/runner-dev/runner/budget"
	"github.com/runner-dev/runner/internal/batch"
	"github.com/runner-dev/runner/internal/dockertest"
	"github.com/runner-dev/runner/sandbox"
	"github.com/runner-dev/runner/sandbox/docker"
	"github.com/runner-dev/runner/tasks"
)

// batchTasks is the size of the queue, def unless RUNNER_BENCH_TASKS
// overrides it for a quick look.
func batchTasks(tb testing.TB, def int) int {
	n := def
	if s := os.Getenv("RUNNER_BENCH_TASKS"); s != "" {
		v, err := strconv.Atoi(s)
		if err != nil || v < 1 {
			tb.Fatalf("RUNNER_BENCH_TASKS=%q: want a positive number", s)
		}
		n = v
	}
	return n
}

// toolCalls is how many tools each task's model calls before it completes.
const toolCalls = 10

// BenchmarkBatch runs a queue of tasks, each ten tool calls of an instant
// scripted model on a small repository, through batch.Run, against
// bench/baseline-batch.sh doing the same docker and git work with the CLIs.
// It reports tasks per second, runner's live heap after the first tenth
// and after the last task (flat means no growth with the queue), its peak
// RSS, and fails if a container is left. Goal: higher throughput than the
// script at concurrency 1, 2 and 4.
func BenchmarkBatch(b *testing.B) {
	e := dockertest.Engine(b)
	image := dockertest.Busybox(b)
	fixture := fixtureRepo(b, 100)
	n := batchTasks(b, 50)
	script, err := filepath.Abs("baseline-batch.sh")
	if err != nil {
		b.Fatal(err)
	}
	for _, conc := range []int{1, 2, 4} {
		runImpls(b, fmt.Sprintf("concurrency=%d/", conc), impl{"docker-cli", func(b *testing.B) {
			cleanBaselines(b)
			for b.Loop() {
				var repo, work string
				untimed(b, func() { repo, work = userRepo(b, fixture), b.TempDir() })
				label := fmt.Sprintf("%s=%d", baselineLabel, os.Getpid())
				mustRun(b, "sh", script, image, repo, strconv.Itoa(n), strconv.Itoa(conc), work, label)
				untimed(b, func() {
					if left := removeBaselineContainers(b); left > 0 {
						b.Fatalf("the script left %d containers", left)
					}
					checkBranches(b, repo, n)
					settle()
				})
			}
			b.ReportMetric(float64(n*b.N)/b.Elapsed().Seconds(), "tasks/s")
		}}, impl{"runner", func(b *testing.B) {
			var mem memoryProbe
			for b.Loop() {
				var repo string
				var queue []tasks.Task
				var store *tasks.Store
				runID := fmt.Sprintf("%s-batch-%d", dockertest.RunID, conc)
				untimed(b, func() {
					repo = userRepo(b, fixture)
					queue = benchQueue(repo, image, n)
					var err error
					if store, err = tasks.OpenStore(b.TempDir()); err != nil {
						b.Fatal(err)
					}
					mem.reset(n)
				})
				sum, err := batch.Run(context.Background(), queue, batch.Options{Concurrency: conc, RunID: runID}, batch.Deps{
					Store: store,
					StartSandbox: func(ctx context.Context, cfg sandbox.Config) (sandbox.Sandbox, error) {
						return e.Start(ctx, cfg)
					},
					ImageExists: e.ImageExists,
					NewModel: func(tasks.Task, *agent.Trajectory) (agent.Model, error) {
						return instantModel{calls: toolCalls}, nil
					},
					Prices:   budget.DefaultPrices(),
					Progress: &mem,
				})
				untimed(b, func() {
					store.Close()
					if err != nil {
						b.Fatal(err)
					}
					for _, r := range sum.Results {
						if r.Status != tasks.StatusSucceeded || r.Commit == "" || r.Steps != toolCalls+1 {
							b.Fatalf("task %s: %s after %d steps, commit %q: %s", r.ID, r.Status, r.Steps, r.Commit, r.Error)
						}
					}
					checkBranches(b, repo, n)
					if left := leftSandboxes(b, e, runID); left > 0 {
						b.Fatalf("batch.Run left %d sandboxes of its run", left)
					}
					settle()
				})
			}
			b.ReportMetric(float64(n*b.N)/b.Elapsed().Seconds(), "tasks/s")
			mem.report(b)
		}})
	}
}

// benchQueue is n tasks on repo that no earlier iteration has finished.
func benchQueue(repo, image string, n int) []tasks.Task {
	q := make([]tasks.Task, n)
	for i := range q {
		q[i] = tasks.Task{
			ID: fmt.Sprintf("t%d", i+1), Repo: repo, Prompt: "Run the commands, then complete.",
			Image: image, Model: "bench-instant", MaxSteps: 2 * toolCalls,
		}
	}
	return q
}

// userRepo is a fresh copy of the fixture repository, the user's repository
// that receives the branches.
func userRepo(b *testing.B, fixture string) string {
	dir := filepath.Join(b.TempDir(), "repo")
	mustRun(b, "cp", "-a", fixture, dir)
	return dir
}

// checkBranches fails unless repo has n agent branches, each one commit on
// top of main that adds DONE.txt.
func checkBranches(b *testing.B, repo string, n int) {
	refs := strings.Fields(mustGit(b, repo, "for-each-ref", "--format=%(refname)", "refs/heads/agent/"))
	if len(refs) != n {
		b.Fatalf("%d agent branches, want %d", len(refs), n)
	}
	if got := mustGit(b, repo, "diff", "--name-status", "main", refs[0]); got != "A\tDONE.txt" {
		b.Fatalf("%s changes %q, want A DONE.txt", refs[0], got)
	}
}

// leftSandboxes counts the containers of run runID still on the engine.
func leftSandboxes(b *testing.B, e *docker.Engine, runID string) int {
	list, err := e.List(context.Background())
	if err != nil {
		b.Fatal(err)
	}
	n := 0
	for _, l := range list {
		if l.Run == runID {
			n++
		}
	}
	return n
}

// instantModel is a model that answers at once: calls-1 run_command calls
// of `true`, one that writes DONE.txt, then complete. It counts the tool
// results in the request to know where the task is, so one value serves
// every task.
type instantModel struct{ calls int }

func (m instantModel) Complete(_ context.Context, req agent.Request) (agent.Response, error) {
	done, size := 0, 0
	for _, msg := range req.Messages {
		size += len(msg.Content)
		if msg.Role == agent.RoleTool {
			done++
		}
	}
	name, args := "run_command", `{"command":"true"}`
	switch {
	case done == m.calls-1:
		args = `{"command":"echo task-done > DONE.txt"}`
	case done >= m.calls:
		name, args = "complete", `{"summary":"Ran the commands."}`
	}
	return agent.Response{
		Message: agent.Message{Role: agent.RoleAssistant, ToolCalls: []agent.ToolCall{
			{ID: fmt.Sprintf("call_%d", done), Name: name, Arguments: args},
		}},
		FinishReason: agent.FinishToolCalls,
		Usage:        agent.Usage{PromptTokens: int64(size/4 + 1), CompletionTokens: 20},
		Model:        req.Model,
	}, nil
}

// memoryProbe is a batch.Progress that samples the live heap (after a
// collection) each time a task finishes.
type memoryProbe struct {
	mu       sync.Mutex
	heap     []uint64 // live heap after the i-th finished task
	firstMB  []float64
	lastMB   []float64
	peakRSS  []float64
	finished int
}

func (p *memoryProbe) reset(n int) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.heap, p.finished = make([]uint64, 0, n), 0
	// Writing 5 to clear_refs resets the peak RSS (VmHWM) of the process.
	_ = os.WriteFile("/proc/self/clear_refs", []byte("5"), 0)
}

func (p *memoryProbe) Skipped(tasks.Task, tasks.Result) {}
func (p *memoryProbe) Started(tasks.Task, int)          {}

func (p *memoryProbe) Finished(tasks.Task, tasks.Result) {
	runtime.GC()
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	p.mu.Lock()
	defer p.mu.Unlock()
	p.heap = append(p.heap, ms.HeapAlloc)
	p.finished++
	if p.finished == cap(p.heap) {
		tenth := max(1, len(p.heap)/10)
		p.firstMB = append(p.firstMB, maxMB(p.heap[:tenth]))
		p.lastMB = append(p.lastMB, maxMB(p.heap[len(p.heap)-tenth:]))
		p.peakRSS = append(p.peakRSS, peakRSSMB())
	}
}

// report gives the worst of every iteration.
func (p *memoryProbe) report(b *testing.B) {
	p.mu.Lock()
	defer p.mu.Unlock()
	b.ReportMetric(maxOf(p.firstMB), "heap-MB-first10%")
	b.ReportMetric(maxOf(p.lastMB), "heap-MB-last10%")
	b.ReportMetric(maxOf(p.peakRSS), "peak-RSS-MB")
}

func maxMB(xs []uint64) float64 {
	var m uint64
	for _, x := range xs {
		m = max(m, x)
	}
	return float64(m) / (1 << 20)
}

func maxOf(xs []float64) float64 {
	m := 0.0
	for _, x := range xs {
		m = max(m, x)
	}
	return m
}

// peakRSSMB reads the process's peak resident set (VmHWM).
func peakRSSMB() float64 {
	f, err := os.Open("/proc/self/status")
	if err != nil {
		return 0
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		if v, ok := strings.CutPrefix(sc.Text(), "VmHWM:"); ok {
			kb, _ := strconv.ParseFloat(strings.TrimSuffix(strings.TrimSpace(v), " kB"), 64)
			return kb / 1024
		}
	}
	return 0
}
