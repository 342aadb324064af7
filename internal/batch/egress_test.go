package batch

import (
	"bufio"
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/moby/moby/client"

	"github.com/runner-dev/runner/agent"
	"github.com/runner-dev/runner/internal/dockertest"
	"github.com/runner-dev/runner/internal/egress"
	"github.com/runner-dev/runner/internal/egress/dockernet"
	"github.com/runner-dev/runner/internal/fakellm"
	"github.com/runner-dev/runner/sandbox"
	"github.com/runner-dev/runner/sandbox/docker"
	"github.com/runner-dev/runner/tasks"
)

// killProxyBefore is a sandbox that kills the run's egress proxy just
// before it runs a command containing trigger.
type killProxyBefore struct {
	sandbox.Sandbox
	t       *testing.T
	runID   string
	trigger string
}

func (k killProxyBefore) Exec(ctx context.Context, cmd string, opt sandbox.ExecOptions) (sandbox.ExecResult, error) {
	if strings.Contains(cmd, k.trigger) {
		c := dockertest.Client(k.t)
		ctx := context.WithoutCancel(ctx) // the kill halts the task, and so ctx
		list, err := c.ContainerList(ctx, client.ContainerListOptions{Filters: make(client.Filters).
			Add("label", docker.LabelRun+"="+k.runID, dockernet.LabelRole+"=proxy")})
		if err != nil || len(list.Items) != 1 {
			k.t.Errorf("the run's proxy: %v, %d found", err, len(list.Items))
		} else if _, err := c.ContainerKill(ctx, list.Items[0].ID, client.ContainerKillOptions{Signal: "KILL"}); err != nil {
			k.t.Error(err)
		}
	}
	return k.Sandbox.Exec(ctx, cmd, opt)
}

// A task with an allowlist reaches its listed host through the proxy, the
// trajectory records every decision, the result lists the refused hosts,
// and when the proxy dies mid-task the task ends as sandbox_error, its
// partial work committed as such.
func TestAllowlistTaskRecordsAndFailsClosed(t *testing.T) {
	up := dockertest.UpstreamNetwork(t)
	dockertest.WebServer(t, up, "hello-from-pkg", "pkg.example.test", "other.example.test")
	repo := fixtureRepo(t)
	outDir := t.TempDir()
	store, err := tasks.OpenStore(outDir)
	if err != nil {
		t.Fatal(err)
	}
	defer store.Close()
	srv := fakellm.New(t,
		fakellm.ToolCall("run_command", `{"command":"wget -q -O fetched.txt http://pkg.example.test/ && wget -q -O - http://other.example.test/; wget -q -O - http://10.0.0.1/; echo done"}`),
		fakellm.ToolCall("run_command", `{"command":"echo after-proxy-death; sleep 30"}`),
	)
	d := deps(t, store, srv)
	runID := dockertest.RunID + "-egress-" + randomSuffix()
	start := d.StartSandbox
	d.StartSandbox = func(ctx context.Context, cfg sandbox.Config) (sandbox.Sandbox, error) {
		cfg.EgressUpstream = up
		sb, err := start(ctx, cfg)
		if err != nil {
			return nil, err
		}
		return killProxyBefore{Sandbox: sb, t: t, runID: runID, trigger: "after-proxy-death"}, nil
	}
	task := tasks.Task{ID: "net", Repo: repo, Prompt: "Fetch the page.", Network: tasks.NetworkAllowlist,
		Allow: []string{"pkg.example.test:80"}, Image: dockertest.Busybox(t), Model: "gpt-4o-mini", BudgetUSD: 1}
	sum, err := Run(context.Background(), []tasks.Task{task}, Options{RunID: runID}, d)
	if err != nil {
		t.Fatal(err)
	}
	r := sum.Results[0]
	if r.Status != tasks.StatusSandboxError || !strings.Contains(r.Error, "egress proxy stopped") {
		t.Fatalf("result: status %s, error %q; want sandbox_error naming the egress proxy", r.Status, r.Error)
	}
	if want := []string{"other.example.test:80", "10.0.0.1:80"}; !slices.Equal(r.RefusedHosts, want) {
		t.Errorf("refused hosts = %q, want %q", r.RefusedHosts, want)
	}
	if r.Commit == "" {
		t.Fatalf("the partial work was not committed: %+v", r)
	}
	if got := git(t, repo, "show", "agent/net:fetched.txt"); got != "hello-from-pkg" {
		t.Errorf("fetched.txt on the branch = %q", got)
	}
	// The trajectory has the decisions and the stop.
	f, err := os.Open(filepath.Join(outDir, "trajectories", "net.1.jsonl"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var got []string
	sc := bufio.NewScanner(f)
	sc.Buffer(nil, 1<<20)
	for sc.Scan() {
		var ev agent.Event
		if json.Unmarshal(sc.Bytes(), &ev) == nil && ev.Type == agent.EventEgress && ev.Egress != nil {
			got = append(got, ev.Egress.Method+" "+ev.Egress.Host+" "+ev.Egress.Decision)
		}
	}
	want := []string{"GET pkg.example.test allowed", "GET other.example.test refused", "GET 10.0.0.1 refused", egress.Stopped + "  refused"}
	if !slices.Equal(got, want) {
		t.Errorf("egress events in the trajectory:\n got %q\nwant %q", got, want)
	}
	// Nothing of the run is left: sandbox, proxy, network.
	c := dockertest.Client(t)
	nets, _ := c.NetworkList(context.Background(), client.NetworkListOptions{Filters: make(client.Filters).Add("label", docker.LabelRun+"="+runID)})
	ctrs, _ := c.ContainerList(context.Background(), client.ContainerListOptions{All: true, Filters: make(client.Filters).Add("label", docker.LabelRun+"="+runID)})
	if len(nets.Items) != 0 || len(ctrs.Items) != 0 {
		t.Errorf("left behind: %d networks, %d containers", len(nets.Items), len(ctrs.Items))
	}
}

func randomSuffix() string {
	b := make([]byte, 4)
	rand.Read(b)
	return hex.EncodeToString(b)
}
