package batch

import (
	"context"
	"errors"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/runner-dev/runner/agent"
	"github.com/runner-dev/runner/internal/dockertest"
	"github.com/runner-dev/runner/internal/fakellm"
	"github.com/runner-dev/runner/sandbox"
	"github.com/runner-dev/runner/tasks"
)

// withEndpoint puts the models of d behind one gate for srv.
func withEndpoint(t *testing.T, d Deps, srv *fakellm.Server, cfg agent.EndpointConfig) (Deps, *atomic.Int32) {
	prober, err := agent.NewOpenAI(agent.OpenAIConfig{BaseURL: srv.URL(), APIKey: "sk-batch-test-key-123456"})
	if err != nil {
		t.Fatal(err)
	}
	cfg.Probe = prober.Probe
	d.Endpoint = agent.NewEndpoint(cfg)
	t.Cleanup(d.Endpoint.Close)
	d.NewModel = func(task tasks.Task, traj *agent.Trajectory) (agent.Model, error) {
		if file, ok := strings.CutPrefix(task.Model, "replay:"); ok {
			return agent.LoadReplay(file)
		}
		return agent.NewOpenAI(agent.OpenAIConfig{BaseURL: srv.URL(), APIKey: "sk-batch-test-key-123456", Endpoint: d.Endpoint})
	}
	started := &atomic.Int32{}
	start := d.StartSandbox
	d.StartSandbox = func(ctx context.Context, cfg sandbox.Config) (sandbox.Sandbox, error) {
		started.Add(1)
		return start(ctx, cfg)
	}
	return d, started
}

func openStore(t *testing.T) *tasks.Store {
	store, err := tasks.OpenStore(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { store.Close() })
	return store
}

// An endpoint that does not answer stops the run before any sandbox
// starts, with a configuration error; a queue of replays does not ask it.
func TestPreflightBeforeAnySandbox(t *testing.T) {
	repo := fixtureRepo(t)
	srv := fakellm.New(t)
	srv.Down()
	store := openStore(t)
	d, started := withEndpoint(t, deps(t, store, srv), srv, agent.EndpointConfig{Name: "fake"})
	queue := []tasks.Task{{ID: "one", Repo: repo, Prompt: "p", Image: dockertest.Busybox(t), Model: "gpt-4o-mini"}}
	_, err := Run(context.Background(), queue, Options{RunID: dockertest.RunID}, d)
	if !errors.Is(err, ErrConfig) || !errors.Is(err, agent.ErrUnreachable) {
		t.Fatalf("Run = %v, want a configuration error saying the endpoint does not answer", err)
	}
	if n := started.Load(); n != 0 {
		t.Errorf("%d sandboxes started", n)
	}
	if rs := store.Results(); len(rs) != 0 {
		t.Errorf("results recorded: %+v", rs)
	}

	queue[0].Model = "replay:/nonexistent/recording.jsonl"
	sum, err := Run(context.Background(), queue, Options{RunID: dockertest.RunID}, d)
	if err != nil {
		t.Fatalf("a queue of replays stopped at the preflight: %v", err)
	}
	if r := sum.Results[0]; r.Status != tasks.StatusModelError || !strings.Contains(r.Error, "load replay") {
		t.Errorf("replay result = %+v; want the replay's own error", r)
	}
}

// The endpoint goes down for longer than the run waits: the running task
// ends model_error naming the outage, the task waiting to start never
// starts, and it is not recorded, so that a rerun runs it.
func TestOutageLongerThanTheWait(t *testing.T) {
	repo := fixtureRepo(t)
	srv := fakellm.New(t)
	store := openStore(t)
	d, started := withEndpoint(t, deps(t, store, srv), srv, agent.EndpointConfig{
		Name: "fake", OutageWait: 500 * time.Millisecond, FirstProbeWait: 10 * time.Millisecond,
	})
	start := d.StartSandbox
	d.StartSandbox = func(ctx context.Context, cfg sandbox.Config) (sandbox.Sandbox, error) {
		srv.Down() // after the preflight, before the first model call
		return start(ctx, cfg)
	}
	queue := []tasks.Task{
		{ID: "first", Repo: repo, Prompt: "p", Image: dockertest.Busybox(t), Model: "gpt-4o-mini"},
		{ID: "second", Repo: repo, Prompt: "p", Image: dockertest.Busybox(t), Model: "gpt-4o-mini"},
	}
	sum, err := Run(context.Background(), queue, Options{RunID: dockertest.RunID}, d)
	if err != nil {
		t.Fatal(err)
	}
	first, second := sum.Results[0], sum.Results[1]
	if first.Status != tasks.StatusModelError || !strings.Contains(first.Error, "fake has not answered for") {
		t.Errorf("first = %+v; want model_error naming the outage", first)
	}
	if second.Status != tasks.StatusModelError || !strings.HasPrefix(second.Error, "not started: ") ||
		!strings.Contains(second.Error, "fake has not answered for") {
		t.Errorf("second = %+v; want model_error, not started, naming the outage", second)
	}
	if n := started.Load(); n != 1 {
		t.Errorf("%d sandboxes started, want 1", n)
	}
	if _, ok := store.Finished()["second"]; ok || store.Done("second") {
		t.Errorf("the task that never started is recorded as finished: a rerun would skip it")
	}
	if !store.Done("first") {
		t.Errorf("the task that ran has no final result")
	}
}
