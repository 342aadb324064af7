package dockernet_test

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"net"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/moby/moby/api/pkg/stdcopy"
	"github.com/moby/moby/client"

	"github.com/runner-dev/runner/internal/dockertest"
	"github.com/runner-dev/runner/internal/egress"
	"github.com/runner-dev/runner/internal/egress/dockernet"
	"github.com/runner-dev/runner/sandbox"
	"github.com/runner-dev/runner/sandbox/docker"
)

func randomID() string {
	b := make([]byte, 4)
	rand.Read(b)
	return hex.EncodeToString(b)
}

// events collects what the proxy reports.
type events struct {
	mu      sync.Mutex
	list    []egress.Event
	stopped chan struct{}
}

func newEvents() *events { return &events{stopped: make(chan struct{})} }

func (e *events) add(ev egress.Event) {
	e.mu.Lock()
	defer e.mu.Unlock()
	e.list = append(e.list, ev)
	if ev.Method == egress.Stopped {
		close(e.stopped)
	}
}

func (e *events) find(host, decision string) (egress.Event, bool) {
	e.mu.Lock()
	defer e.mu.Unlock()
	for _, ev := range e.list {
		if ev.Host == host && ev.Decision == decision {
			return ev, true
		}
	}
	return egress.Event{}, false
}

func run(t *testing.T, sb sandbox.Sandbox, cmd string) (string, int) {
	t.Helper()
	res, err := sb.Exec(t.Context(), cmd, sandbox.ExecOptions{Timeout: 60 * time.Second})
	if err != nil {
		t.Fatalf("exec %q: %v", cmd, err)
	}
	return res.Output, res.ExitCode
}

func proxyOf(t *testing.T, cli *client.Client, runID string) string {
	t.Helper()
	list, err := cli.ContainerList(t.Context(), client.ContainerListOptions{All: true, Filters: make(client.Filters).
		Add("label", docker.LabelRun+"="+runID, dockernet.LabelRole+"=proxy")})
	if err != nil || len(list.Items) != 1 {
		t.Fatalf("the run's proxy container: %v, %d found", err, len(list.Items))
	}
	return list.Items[0].ID
}

func networksOf(t *testing.T, cli *client.Client, runID string) []string {
	t.Helper()
	list, err := cli.NetworkList(context.Background(), client.NetworkListOptions{Filters: make(client.Filters).
		Add("label", docker.LabelRun+"="+runID)})
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, n := range list.Items {
		names = append(names, n.Name)
	}
	return names
}

func TestAllowlistOnTheEngine(t *testing.T) {
	cli := dockertest.Client(t)
	e := dockertest.Engine(t)
	up := dockertest.UpstreamNetwork(t)
	pkgIP, _ := dockertest.WebServer(t, up, "hello-from-pkg", "pkg.example.test", "other.example.test", "a.wild.example.test")
	runID := dockertest.RunID + "-egress-" + randomID()
	ev := newEvents()
	sb, err := e.Start(t.Context(), sandbox.Config{
		Image: dockertest.Busybox(t), RunID: runID, TaskID: "egress",
		Egress:         []string{"pkg.example.test:80", "private.example.test:80", "*.wild.example.test"},
		EgressUpstream: up, EgressReport: ev.add,
	})
	if err != nil {
		t.Fatal(err)
	}
	closed := false
	t.Cleanup(func() {
		if !closed {
			sb.Close(context.Background())
		}
	})
	// A server on the sandbox's own network: its name resolves to a
	// private address.
	internal := networksOf(t, cli, runID)
	if len(internal) != 1 {
		t.Fatalf("networks of the run: %v, want one", internal)
	}
	_, privateID := dockertest.WebServer(t, internal[0], "private", "private.example.test")

	env, _ := run(t, sb, "env | grep -i _proxy= | sort")
	for _, k := range []string{"HTTP_PROXY=http://", "HTTPS_PROXY=http://", "NO_PROXY=localhost", "http_proxy=http://", "https_proxy=http://", "no_proxy=localhost"} {
		if !strings.Contains(env, k) {
			t.Errorf("sandbox environment lacks %s:\n%s", k, env)
		}
	}

	t.Run("listed host reachable", func(t *testing.T) {
		out, code := run(t, sb, "wget -q -O - http://pkg.example.test/")
		if code != 0 || !strings.Contains(out, "hello-from-pkg") {
			t.Fatalf("wget through the proxy: exit %d: %s", code, out)
		}
		got, ok := ev.find("pkg.example.test", egress.Allowed)
		if !ok || got.Port != 80 || got.Addr != pkgIP.String() || got.BytesDown == 0 {
			t.Errorf("allowed event: %+v (found %v), want port 80, addr %s, bytes down", got, ok, pkgIP)
		}
	})
	t.Run("CONNECT tunnel to a wildcard host", func(t *testing.T) {
		out, _ := run(t, sb, `printf 'CONNECT a.wild.example.test:80 HTTP/1.1\r\nHost: a.wild.example.test:80\r\n\r\nGET / HTTP/1.0\r\n\r\n' | nc "${HTTP_PROXY#http://}" | head -c 2000`)
		if !strings.Contains(out, "200 Connection established") || !strings.Contains(out, "hello-from-pkg") {
			t.Fatalf("CONNECT through the proxy:\n%s", out)
		}
	})
	refusals := []struct{ name, cmd, host, reason string }{
		{"unlisted host", "wget -q -O - http://other.example.test/", "other.example.test", "not in the allowlist"},
		{"IP literal", "wget -q -O - http://" + pkgIP.String() + "/", pkgIP.String(), "IP addresses"},
		{"name resolving to a private address", "wget -q -O - http://private.example.test/", "private.example.test", "private"},
		{"listed host on another port", "wget -q -O - http://pkg.example.test:8080/", "pkg.example.test", "port 8080"},
	}
	for _, r := range refusals {
		t.Run(r.name, func(t *testing.T) {
			out, code := run(t, sb, r.cmd)
			if code == 0 || strings.Contains(out, "private") && r.host == "private.example.test" && !strings.Contains(out, "403") {
				t.Fatalf("%s: exit %d: %s; want a refusal", r.cmd, code, out)
			}
			got, ok := ev.find(r.host, egress.Refused)
			if !ok || !strings.Contains(got.Reason, r.reason) {
				t.Errorf("refusal event for %s: %+v (found %v), want a reason with %q", r.host, got, ok, r.reason)
			}
		})
	}
	t.Run("direct connection finds no route", func(t *testing.T) {
		out, _ := run(t, sb, "printf 'GET / HTTP/1.0\\r\\n\\r\\n' | nc -w 5 "+pkgIP.String()+" 80 2>&1; echo exit=$?")
		if strings.Contains(out, "hello-from-pkg") || strings.Contains(out, "exit=0") {
			t.Fatalf("a direct connection reached the server:\n%s", out)
		}
	})
	t.Run("the host is not reachable through the gateway", func(t *testing.T) {
		ln, err := net.Listen("tcp", "0.0.0.0:0")
		if err != nil {
			t.Fatal(err)
		}
		defer ln.Close()
		accepted := make(chan struct{}, 1)
		go func() {
			if c, err := ln.Accept(); err == nil {
				c.Close()
				accepted <- struct{}{}
			}
		}()
		port := ln.Addr().(*net.TCPAddr).Port
		out, _ := run(t, sb, fmt.Sprintf("gw=$(ip route | awk '/^default/ {print $3}'); echo gateway=$gw; nc -w 5 $gw %d </dev/null 2>&1; echo exit=$?", port))
		select {
		case <-accepted:
			t.Fatalf("the sandbox reached a port of the host through its gateway:\n%s", out)
		default:
		}
		if strings.Contains(out, "exit=0") {
			t.Fatalf("the sandbox connected to the gateway:\n%s", out)
		}
	})
	t.Run("no DNS in the sandbox for outside names", func(t *testing.T) {
		out, code := run(t, sb, "nslookup pkg.example.test 2>&1")
		if code == 0 && strings.Contains(out, pkgIP.String()) {
			t.Fatalf("the sandbox resolved a name of the outside network:\n%s", out)
		}
	})
	t.Run("proxy dies: fails closed", func(t *testing.T) {
		if _, err := cli.ContainerKill(t.Context(), proxyOf(t, cli, runID), client.ContainerKillOptions{Signal: "KILL"}); err != nil {
			t.Fatal(err)
		}
		select {
		case <-ev.stopped:
		case <-t.Context().Done():
			t.Fatal("no Stopped event after the proxy was killed")
		}
		_, err := sb.Exec(t.Context(), "wget -Y off -T 5 -q -O - http://"+pkgIP.String()+"/", sandbox.ExecOptions{})
		if !errors.Is(err, sandbox.ErrEgressStopped) {
			t.Fatalf("exec after the proxy died: %v, want ErrEgressStopped", err)
		}
	})
	cli.ContainerRemove(context.Background(), privateID, client.ContainerRemoveOptions{Force: true})
	closed = true
	if err := sb.Close(context.Background()); err != nil {
		t.Fatalf("close: %v", err)
	}
	if left := networksOf(t, cli, runID); len(left) != 0 {
		t.Errorf("networks left after Close: %v", left)
	}
	list, _ := cli.ContainerList(context.Background(), client.ContainerListOptions{All: true, Filters: make(client.Filters).Add("label", docker.LabelRun+"="+runID)})
	if len(list.Items) != 0 {
		t.Errorf("%d containers of the run left after Close", len(list.Items))
	}
}

// A run that dies without closing its sandbox leaves the proxy and the
// network; removing the run's leftovers (what runner does on exit, and
// cleanup does by owner and deadline) removes them too.
func TestRemoveRunRemovesProxyAndNetwork(t *testing.T) {
	cli := dockertest.Client(t)
	e := dockertest.Engine(t)
	runID := dockertest.RunID + "-egress-" + randomID()
	if _, err := e.Start(t.Context(), sandbox.Config{Image: dockertest.Busybox(t), RunID: runID, Egress: []string{"pkg.example.test"}}); err != nil {
		t.Fatal(err)
	}
	proxyOf(t, cli, runID)
	if n := networksOf(t, cli, runID); len(n) != 1 {
		t.Fatalf("networks of the run: %v", n)
	}
	rep, err := e.RemoveRun(t.Context(), runID)
	if err != nil {
		t.Fatal(err)
	}
	if len(rep.Removed) != 2 {
		t.Errorf("removed %d containers, want the sandbox and its proxy", len(rep.Removed))
	}
	if n := networksOf(t, cli, runID); len(n) != 0 {
		t.Errorf("networks left: %v", n)
	}
}

func TestStartRefusesBadAllowlist(t *testing.T) {
	cli := dockertest.Client(t)
	_, err := dockernet.Start(t.Context(), cli, dockernet.Options{Allow: []string{"10.0.0.1:443"}, Name: "runner-test"})
	if err == nil || !strings.Contains(err.Error(), "IP addresses") {
		t.Fatalf("Start with an IP rule: %v", err)
	}
	_, err = dockernet.Start(t.Context(), cli, dockernet.Options{Name: "runner-test"})
	if err == nil || !strings.Contains(err.Error(), "empty") {
		t.Fatalf("Start with no rule: %v", err)
	}
}

// The proxy serves the sandbox's network only: a container on its
// upstream network cannot use it.
func TestProxyNotServedUpstream(t *testing.T) {
	cli := dockertest.Client(t)
	up := dockertest.UpstreamNetwork(t)
	eg, err := dockernet.Start(t.Context(), cli, dockernet.Options{Allow: []string{"pkg.example.test"}, Name: "runner-test-" + randomID(), Upstream: up,
		Labels: map[string]string{dockertest.LabelTest: "1"}})
	if err != nil {
		t.Fatal(err)
	}
	defer eg.Close(context.Background())
	list, err := cli.ContainerList(t.Context(), client.ContainerListOptions{Filters: make(client.Filters).Add("label", dockernet.LabelRole+"=proxy", dockertest.LabelTest+"=1")})
	if err != nil || len(list.Items) == 0 {
		t.Fatalf("proxy container: %v", err)
	}
	var upIP string
	for _, c := range list.Items {
		res, err := cli.ContainerInspect(t.Context(), c.ID, client.ContainerInspectOptions{})
		if err == nil && res.Container.NetworkSettings.Networks[eg.Network()] != nil {
			upIP = res.Container.NetworkSettings.Networks[up].IPAddress.String()
		}
	}
	if upIP == "" {
		t.Fatal("the proxy's upstream address not found")
	}
	// A neighbour on the upstream network tries the proxy's port there;
	// as a control, the same probe on its internal address would work (the
	// sandbox tests show it).
	_, id := dockertest.WebServer(t, up, "neighbour")
	out := execIn(t, cli, id, fmt.Sprintf("nc -w 5 %s %d </dev/null; echo exit=$?", upIP, dockernet.ProxyPort))
	if strings.Contains(out, "exit=0") {
		t.Fatalf("a container on the upstream network reached the proxy:\n%s", out)
	}
}

// execIn runs cmd with sh -c in container id and returns its output.
func execIn(t *testing.T, cli *client.Client, id, cmd string) string {
	t.Helper()
	created, err := cli.ExecCreate(t.Context(), id, client.ExecCreateOptions{Cmd: []string{"sh", "-c", cmd}, AttachStdout: true, AttachStderr: true})
	if err != nil {
		t.Fatal(err)
	}
	att, err := cli.ExecAttach(t.Context(), created.ID, client.ExecAttachOptions{})
	if err != nil {
		t.Fatal(err)
	}
	defer att.Close()
	var out strings.Builder
	stdcopy.StdCopy(&out, &out, att.Reader)
	return out.String()
}
