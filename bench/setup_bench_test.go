package bench

import (
	"context"
	"fmt"
	"net"
	"net/http"
	"sync/atomic"
	"testing"
	"time"

	"github.com/runner-dev/runner/agent"
	"github.com/runner-dev/runner/budget"
	"github.com/runner-dev/runner/internal/batch"
	"github.com/runner-dev/runner/internal/dockertest"
	"github.com/runner-dev/runner/sandbox"
	"github.com/runner-dev/runner/tasks"
)

// setupTasks is the size of the queue of BenchmarkSetupCache.
const setupTasks = 8

// BenchmarkSetupCache runs 8 tasks on one repository whose setup takes
// 20 s (a sleep, then a request that bumps a counter on the host) with the
// environment cache off and on, at concurrency 1 and 4, beside what the
// cached batch should cost: one setup alone plus the same 8 tasks with no
// setup. It reports the wall time and how many times setup really ran (the
// counter). Goal: cached ≤ 1.2 × (one setup + 8 tasks), and one setup run
// at concurrency 4.
func BenchmarkSetupCache(b *testing.B) {
	e := dockertest.Engine(b)
	image := dockertest.Busybox(b)
	fixture := fixtureRepo(b, 100)
	var bumps atomic.Int64
	ln, err := net.Listen("tcp", "0.0.0.0:0")
	if err != nil {
		b.Fatal(err)
	}
	srv := &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		bumps.Add(1)
		fmt.Fprintln(w, "bumped")
	})}
	go srv.Serve(ln)
	defer srv.Close()
	port := ln.Addr().(*net.TCPAddr).Port
	setup := func(round string, noCache bool) tasks.Setup {
		return tasks.Setup{
			Commands: []string{"sleep 20", fmt.Sprintf(`gw=$(ip route | awk '/^default/ {print $3}'); printf 'GET / HTTP/1.0\r\n\r\n' | nc -w 10 "$gw" %d | grep -q bumped`, port)},
			Network:  tasks.NetworkBridge, Timeout: 5 * time.Minute, NoCache: noCache,
			Env: map[string]string{"BENCH_ROUND": round}, // a new key each round
		}
	}
	deps := func(store *tasks.Store) batch.Deps {
		return batch.Deps{
			Store:        store,
			StartSandbox: func(ctx context.Context, cfg sandbox.Config) (sandbox.Sandbox, error) { return e.Start(ctx, cfg) },
			Environments: e,
			ImageExists:  e.ImageExists,
			NewModel: func(tasks.Task, *agent.Trajectory) (agent.Model, error) {
				return instantModel{calls: toolCalls}, nil
			},
			Prices: budget.DefaultPrices(),
		}
	}
	runBatch := func(b *testing.B, conc int, s tasks.Setup) (runs int64) {
		var repo string
		var store *tasks.Store
		runID := fmt.Sprintf("%s-setup-%d", dockertest.RunID, conc)
		untimed(b, func() {
			repo = userRepo(b, fixture)
			var err error
			if store, err = tasks.OpenStore(b.TempDir()); err != nil {
				b.Fatal(err)
			}
		})
		queue := benchQueue(repo, image, setupTasks)
		for i := range queue {
			queue[i].Setup = s
		}
		before := bumps.Load()
		sum, err := batch.Run(context.Background(), queue, batch.Options{Concurrency: conc, RunID: runID, EnvironmentCacheLimit: -1}, deps(store))
		untimed(b, func() {
			store.Close()
			if err != nil {
				b.Fatal(err)
			}
			for _, r := range sum.Results {
				if r.Status != tasks.StatusSucceeded {
					b.Fatalf("task %s: %s: %s", r.ID, r.Status, r.Error)
				}
				if r.Setup != nil && r.Setup.Key != "" {
					_ = e.RemoveEnvironment(context.Background(), r.Setup.Key)
				}
			}
			if left := leftSandboxes(b, e, runID); left > 0 {
				b.Fatalf("batch.Run left %d sandboxes of its run", left)
			}
			settle()
		})
		return bumps.Load() - before
	}
	for _, conc := range []int{1, 4} {
		prefix := fmt.Sprintf("concurrency=%d/", conc)
		runImpls(b, prefix,
			impl{"no-setup", func(b *testing.B) {
				for b.Loop() {
					runBatch(b, conc, tasks.Setup{})
				}
			}},
			impl{"one-setup-alone", func(b *testing.B) {
				for b.Loop() {
					var ws string
					untimed(b, func() { ws = b.TempDir() })
					s := setup(sandbox.RandomID(), true)
					env, err := e.Prepare(context.Background(), sandbox.Setup{
						Base:     sandbox.Config{Image: image, Workspace: ws, RunID: dockertest.RunID, TaskID: "alone"},
						Commands: s.Commands, Network: string(s.Network), Timeout: s.Timeout,
					})
					if err != nil {
						b.Fatal(err)
					}
					untimed(b, func() { e.Release(context.Background(), env) })
				}
			}},
			impl{"cache-off", func(b *testing.B) {
				for b.Loop() {
					b.ReportMetric(float64(runBatch(b, conc, setup(sandbox.RandomID(), true))), "setup-runs")
				}
			}},
			impl{"cache-on", func(b *testing.B) {
				for b.Loop() {
					b.ReportMetric(float64(runBatch(b, conc, setup(sandbox.RandomID(), false))), "setup-runs")
				}
			}},
		)
	}
}
