package bench

import (
	"context"
	"fmt"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/moby/moby/client"

	"github.com/runner-dev/runner/agent"
	"github.com/runner-dev/runner/budget"
	"github.com/runner-dev/runner/internal/batch"
	"github.com/runner-dev/runner/internal/dockertest"
	"github.com/runner-dev/runner/internal/hostcpu"
	"github.com/runner-dev/runner/sandbox"
	"github.com/runner-dev/runner/sandbox/docker"
	"github.com/runner-dev/runner/tasks"
)

// BenchmarkModelBoundCPU runs a model-bound batch: RUNNER_BENCH_TASKS
// tasks (default 48), each a scripted model that takes
// RUNNER_BENCH_MODEL_LATENCY (default 1s) per completion, ten tool calls
// of real work in the sandbox (modelBoundScript) and the commit, with 256
// MiB sandboxes, at concurrency 8 and 48, once with an exec per command
// (mode=exec) and once through the sandboxes' channel (mode=channel), the
// two modes one after the other in each concurrency, their order reversed
// with RUNNER_BENCH_REVERSE (bench/run.sh -n 2 cpu sets it every other
// round, which alternates the modes; -count would repeat each mode in a
// row). One iteration is one batch (-benchtime 1x).
//
// It reports per task the host's CPU time (internal/hostcpu, StartNew:
// containers already running when a batch starts count nowhere, and
// shims-at-start says how many there were): cpu-ms-runner (this process:
// batch.Run, the agents, the scripted model, the commits), cpu-ms-engine
// (dockerd, containerd, the shims, runc, fuse-overlayfs), cpu-ms-sandbox
// (the containers' processes: the commands, the channel's helper),
// cpu-ms-unknown (exits whose parent was gone unseen) and cpu-ms-total,
// their sum; cpu-ms-machine, every CPU's busy time, whoever's (the rest of
// the machine's work included); the engine's execs per task (its
// exec_create events for the batch's containers, which shows which mode
// ran); a task's wall time from start to commit (wall-s/task, of which
// the model's latency is 11 times RUNNER_BENCH_MODEL_LATENCY), and the
// batch's (ns/op) and tasks/s. It logs the load average around each batch
// and, per concurrency, the ratios channel/exec. It fails if a task does
// not commit its edit, if a container of the batch is left, or if the
// exit records overflowed.
func BenchmarkModelBoundCPU(b *testing.B) {
	exec := dockertest.Engine(b)
	channel := dockertest.Engine(b).OwnedBy(sandbox.Self())
	if err := channel.UseChannel(dockertest.ChannelHelper(b)); err != nil {
		b.Fatal(err)
	}
	image := dockertest.Busybox(b)
	fixture := fixtureRepo(b, 100)
	n := batchTasks(b, 48)
	latency := modelLatency(b)
	modes := []struct {
		name string
		e    *docker.Engine
	}{{"exec", exec}, {"channel", channel}}
	if os.Getenv("RUNNER_BENCH_REVERSE") != "" {
		modes[0], modes[1] = modes[1], modes[0]
	}
	for _, conc := range []int{8, 48} {
		got := map[string]*modelBoundResult{}
		for _, mode := range modes {
			b.Run(fmt.Sprintf("concurrency=%d/mode=%s", conc, mode.name), func(b *testing.B) {
				got[mode.name] = modelBoundBatch(b, mode.e, image, fixture, n, conc, latency)
				if c, x := got["channel"], got["exec"]; c != nil && x != nil {
					ratio := func(a, b time.Duration) float64 { return float64(a) / float64(b) }
					b.Logf("concurrency=%d: channel/exec per task: CPU total %.2fx (runner %.2fx, engine %.2fx, sandbox %.2fx), machine busy %.2fx, batch wall time %.2fx",
						conc, ratio(c.u.Total(), x.u.Total()), ratio(c.u.Runner, x.u.Runner), ratio(c.u.Engine, x.u.Engine),
						ratio(c.u.Sandbox, x.u.Sandbox), ratio(c.u.Machine, x.u.Machine), ratio(c.wall, x.wall))
				}
			})
		}
	}
}

// modelBoundResult is what one mode's batches spent, in sum.
type modelBoundResult struct {
	u    hostcpu.Usage
	wall time.Duration
}

// modelBoundBatch runs the batch b.N times on engine e, reports its
// metrics, and logs the machine's load around each batch.
func modelBoundBatch(b *testing.B, e *docker.Engine, image, fixture string, n, conc int, latency time.Duration) *modelBoundResult {
	var usage hostcpu.Usage
	var execs int
	var taskWall time.Duration
	for b.Loop() {
		var repo string
		var queue []tasks.Task
		var store *tasks.Store
		runID := fmt.Sprintf("%s-cpu-%d-%d", dockertest.RunID, conc, time.Now().UnixNano())
		untimed(b, func() {
			repo = userRepo(b, fixture)
			queue = benchQueue(repo, image, n)
			for i := range queue {
				queue[i].Limits.Memory = 256 << 20
				queue[i].Model = "bench-scripted"
				queue[i].Prompt = "Look around, make a small edit, test it, then complete."
			}
			var err error
			if store, err = tasks.OpenStore(b.TempDir()); err != nil {
				b.Fatal(err)
			}
			settle()
		})
		load := loadAverage()
		counter := countExecs(b, runID)
		meter, err := hostcpu.StartNew()
		if err != nil {
			b.Fatal(err)
		}
		sum, err := batch.Run(context.Background(), queue, batch.Options{Concurrency: conc, RunID: runID}, batch.Deps{
			Store: store,
			StartSandbox: func(ctx context.Context, cfg sandbox.Config) (sandbox.Sandbox, error) {
				return e.Start(ctx, cfg)
			},
			ImageExists: e.ImageExists,
			NewModel: func(tasks.Task, *agent.Trajectory) (agent.Model, error) {
				return scriptedModel{latency: latency}, nil
			},
			Prices: budget.DefaultPrices(),
		})
		u, merr := meter.Stop()
		untimed(b, func() {
			store.Close()
			if err != nil {
				b.Fatal(err)
			}
			if merr != nil {
				b.Fatal(merr)
			}
			for _, r := range sum.Results {
				if r.Status != tasks.StatusSucceeded || r.Commit == "" || r.Steps != len(modelBoundScript)+1 {
					b.Fatalf("task %s: %s after %d steps, commit %q: %s", r.ID, r.Status, r.Steps, r.Commit, r.Error)
				}
				taskWall += time.Duration(r.Duration)
			}
			checkModelBoundBranches(b, repo, n)
			if left := leftSandboxes(b, e, runID); left > 0 {
				b.Fatalf("batch.Run left %d sandboxes of its run", left)
			}
			b.Logf("load average (1, 5, 15 min) before the batch %s, after %s; machine busy %.1f s, of which measured %.1f s",
				load, loadAverage(), u.Machine.Seconds(), u.Total().Seconds())
			execs += counter.done(b)
			usage.Runner += u.Runner
			usage.Engine += u.Engine
			usage.Sandbox += u.Sandbox
			usage.Unknown += u.Unknown
			usage.Machine += u.Machine
			usage.Exits += u.Exits
			usage.ShimsAtStart = max(usage.ShimsAtStart, u.ShimsAtStart)
			usage.ShimsAtEnd = max(usage.ShimsAtEnd, u.ShimsAtEnd)
		})
	}
	tasksDone := float64(n * b.N)
	perTask := func(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) / tasksDone }
	b.ReportMetric(perTask(usage.Runner), "cpu-ms-runner/task")
	b.ReportMetric(perTask(usage.Engine), "cpu-ms-engine/task")
	b.ReportMetric(perTask(usage.Sandbox), "cpu-ms-sandbox/task")
	b.ReportMetric(perTask(usage.Unknown), "cpu-ms-unknown/task")
	b.ReportMetric(perTask(usage.Total()), "cpu-ms-total/task")
	b.ReportMetric(float64(execs)/tasksDone, "execs/task")
	b.ReportMetric(taskWall.Seconds()/tasksDone, "wall-s/task")
	b.ReportMetric(tasksDone/b.Elapsed().Seconds(), "tasks/s")
	b.ReportMetric(perTask(usage.Machine), "cpu-ms-machine/task")
	b.ReportMetric(float64(usage.ShimsAtStart), "shims-at-start")
	return &modelBoundResult{u: usage, wall: b.Elapsed()}
}

// loadAverage is the first three fields of /proc/loadavg.
func loadAverage() string {
	body, _ := os.ReadFile("/proc/loadavg")
	f := strings.Fields(string(body))
	if len(f) < 3 {
		return "unknown"
	}
	return strings.Join(f[:3], " ")
}

// modelBoundScript is what every task's model asks for, in order, one
// tool call a completion, then complete: looking around, reading, a small
// edit, a test of it, and the file the commit checks.
var modelBoundScript = []struct{ tool, args string }{
	{"run_command", `{"command":"ls -la"}`},
	{"list_files", `{"path":"pkg000","recursive":true}`},
	{"read_file", `{"path":"pkg000/dir1/file00050.txt"}`},
	{"run_command", `{"command":"grep -c e pkg000/dir0/*.txt | head -5"}`},
	{"run_command", `{"command":"cat pkg000/dir1/file00051.txt | wc -l"}`},
	{"write_file", `{"path":"NOTES.md","content":"draft\n"}`},
	{"edit_file", `{"path":"NOTES.md","old_string":"draft","new_string":"final"}`},
	{"run_command", `{"command":"test \"$(cat NOTES.md)\" = final && echo ok"}`},
	{"run_command", `{"command":"find . -name '*.txt' | wc -l"}`},
	{"run_command", `{"command":"echo task-done > DONE.txt"}`},
}

// scriptedModel answers every completion after latency, like a remote
// model: the next call of modelBoundScript, found by counting the tool
// results in the request, or complete after the last. A tool result
// that reports a failure ends the task as failed, which the benchmark
// checks.
type scriptedModel struct{ latency time.Duration }

func (m scriptedModel) Complete(ctx context.Context, req agent.Request) (agent.Response, error) {
	select {
	case <-time.After(m.latency):
	case <-ctx.Done():
		return agent.Response{}, ctx.Err()
	}
	done, size := 0, 0
	for _, msg := range req.Messages {
		size += len(msg.Content)
		if msg.Role == agent.RoleTool {
			done++
		}
	}
	name, args := "complete", `{"summary":"Edited NOTES.md and checked it."}`
	if done < len(modelBoundScript) {
		name, args = modelBoundScript[done].tool, modelBoundScript[done].args
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

// checkModelBoundBranches fails unless repo has n agent branches, each
// one commit on top of main that adds DONE.txt and NOTES.md, the edited
// one.
func checkModelBoundBranches(b *testing.B, repo string, n int) {
	refs := strings.Fields(mustGit(b, repo, "for-each-ref", "--format=%(refname)", "refs/heads/agent/"))
	if len(refs) != n {
		b.Fatalf("%d agent branches, want %d", len(refs), n)
	}
	last := refs[len(refs)-1]
	if got := mustGit(b, repo, "diff", "--name-status", "main", last); got != "A\tDONE.txt\nA\tNOTES.md" {
		b.Fatalf("%s changes %q, want DONE.txt and NOTES.md added", last, got)
	}
	if got := mustGit(b, repo, "show", last+":NOTES.md"); got != "final" {
		b.Fatalf("%s: NOTES.md is %q, want the edit", last, got)
	}
}

// execCounter counts the engine's exec_create events for the containers
// of run runID from its start to done, as they come: the engine keeps
// too few past events to count them afterwards.
type execCounter struct {
	cancel context.CancelFunc
	n      chan int
}

func countExecs(b *testing.B, runID string) *execCounter {
	ctx, cancel := context.WithCancel(context.Background())
	res := dockertest.Client(b).Events(ctx, client.EventsListOptions{
		Filters: make(client.Filters).Add("event", "exec_create").Add("label", docker.LabelRun+"="+runID),
	})
	c := &execCounter{cancel: cancel, n: make(chan int, 1)}
	go func() {
		n := 0
		defer func() { c.n <- n }()
		for {
			select {
			case _, ok := <-res.Messages:
				if !ok {
					return
				}
				n++
			case <-res.Err:
				return
			}
		}
	}()
	return c
}

// done ends the count; the stream's events up to now have arrived once
// the engine has answered a later request.
func (c *execCounter) done(b *testing.B) int {
	if _, err := dockertest.Client(b).Ping(context.Background(), client.PingOptions{}); err != nil {
		b.Fatal(err)
	}
	c.cancel()
	return <-c.n
}

// modelLatency is how long the scripted model takes per completion:
// RUNNER_BENCH_MODEL_LATENCY (a Go duration), default 1s.
func modelLatency(b *testing.B) time.Duration {
	s := os.Getenv("RUNNER_BENCH_MODEL_LATENCY")
	if s == "" {
		return time.Second
	}
	d, err := time.ParseDuration(s)
	if err != nil || d < 0 {
		b.Fatalf("RUNNER_BENCH_MODEL_LATENCY=%q: want a duration", s)
	}
	return d
}
