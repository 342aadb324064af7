package bench

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"sync/atomic"
	"testing"
	"time"

	"github.com/runner-dev/runner/internal/dockertest"
	"github.com/runner-dev/runner/internal/k8stest"
	"github.com/runner-dev/runner/sandbox"
	"github.com/runner-dev/runner/sandbox/kubernetes"
)

// countingTransport counts the requests that reach the API server.
type countingTransport struct {
	next http.RoundTripper
	n    *atomic.Int64
}

func (c countingTransport) RoundTrip(r *http.Request) (*http.Response, error) {
	c.n.Add(1)
	return c.next.RoundTrip(r)
}

// BenchmarkKubernetes times the Kubernetes backend against the Docker
// backend, in one run on one machine: a sandbox from nothing to ready
// (Start; its removal untimed) and the round trip of `true` in a running
// sandbox. Both use the busybox test image and an empty workspace; the pod
// has network bridge (the pod network: no policy and no probe), the
// container network none (Docker's loopback needs nothing of the engine).
// For the Kubernetes backend it also reports the requests that reached
// the API server, per lifecycle (start and close) and per exec. It needs
// the test cluster (RUNNER_K8S_KUBECONFIG, see internal/k8stest).
//
//	go test ./bench -run '^$' -bench '^BenchmarkKubernetes$' -benchtime 20x
func BenchmarkKubernetes(b *testing.B) {
	var requests atomic.Int64
	opt := k8stest.Options(b)
	opt.WrapTransport = func(rt http.RoundTripper) http.RoundTripper { return countingTransport{rt, &requests} }
	ctx := context.Background()
	k, err := kubernetes.Connect(ctx, opt)
	if err != nil {
		b.Fatal(err)
	}
	defer k.Close()
	image := k8stest.Image(b)
	backends := []struct {
		name    string
		backend sandbox.Backend
		network string
	}{
		{"docker", dockertest.Engine(b), "none"},
		{"kubernetes", k, "bridge"},
	}
	cfg := func(network string) sandbox.Config {
		return sandbox.Config{Image: image, Network: network, RunID: dockertest.RunID, TaskID: "bench-k8s", Lifetime: 10 * time.Minute}
	}
	var ready, execs []impl
	for _, be := range backends {
		ready = append(ready, impl{be.name, func(b *testing.B) {
			requests.Store(0)
			for b.Loop() {
				sb, err := be.backend.Start(ctx, cfg(be.network))
				if err != nil {
					b.Fatal(err)
				}
				untimed(b, func() {
					if err := sb.Close(ctx); err != nil {
						b.Fatal(err)
					}
				})
			}
			if be.name == "kubernetes" {
				b.ReportMetric(float64(requests.Load())/float64(b.N), "apireq/lifecycle")
			}
		}})
	}
	for _, be := range backends {
		execs = append(execs, impl{be.name, func(b *testing.B) {
			sb, err := be.backend.Start(ctx, cfg(be.network))
			if err != nil {
				b.Fatal(err)
			}
			defer sb.Close(ctx)
			requests.Store(0)
			for b.Loop() {
				res, err := sb.Exec(ctx, "true", sandbox.ExecOptions{Timeout: time.Minute})
				if err != nil || res.ExitCode != 0 {
					b.Fatalf("exec true: %+v, %v", res, err)
				}
			}
			if be.name == "kubernetes" {
				b.ReportMetric(float64(requests.Load())/float64(b.N), "apireq/exec")
			}
		}})
	}
	runImpls(b, "ready/", ready...)
	runImpls(b, "exec/", execs...)
}

// BenchmarkKubernetesChannel compares, in one run, the Kubernetes backend
// with the command channel (Options.Channel: one long exec to the
// sandbox's helper) and without (an exec of the API server per command and
// per file operation): the requests that reach the API server per task,
// and the time. A task is a sandbox's whole life: Start (network bridge,
// an empty workspace), 50 commands (`true`), three file writes, three
// reads and a listing, a snapshot read to its end, Close. It also times
// the exec round trip (`true`) either way. It needs the test cluster
// (RUNNER_K8S_KUBECONFIG, see internal/k8stest).
//
//	go test ./bench -run '^$' -bench '^BenchmarkKubernetesChannel$' -benchtime 5x
func BenchmarkKubernetesChannel(b *testing.B) {
	ctx := context.Background()
	image := k8stest.Image(b)
	type mode struct {
		name     string
		backend  *kubernetes.Backend
		requests *atomic.Int64
	}
	var modes []mode
	for _, m := range []struct {
		name    string
		channel bool
	}{{"exec", false}, {"channel", true}} {
		n := new(atomic.Int64)
		opt := k8stest.Options(b)
		opt.Channel = m.channel
		opt.WrapTransport = func(rt http.RoundTripper) http.RoundTripper { return countingTransport{rt, n} }
		k, err := kubernetes.Connect(ctx, opt)
		if err != nil {
			b.Fatal(err)
		}
		defer k.Close()
		modes = append(modes, mode{m.name, k, n})
	}
	cfg := sandbox.Config{Image: image, Network: "bridge", RunID: dockertest.RunID, TaskID: "bench-k8s-channel", Lifetime: 10 * time.Minute}
	// A channel that did not start, or ended, says so in a notice.
	exec := func(b *testing.B, sb sandbox.Sandbox) {
		res, err := sb.Exec(ctx, "true", sandbox.ExecOptions{Timeout: time.Minute})
		if err != nil || res.ExitCode != 0 || res.Notice != "" {
			b.Fatalf("exec true: %+v, %v", res, err)
		}
	}
	var tasks, execs []impl
	for _, m := range modes {
		tasks = append(tasks, impl{m.name, func(b *testing.B) {
			m.requests.Store(0)
			for b.Loop() {
				sb, err := m.backend.StartPod(ctx, cfg)
				if err != nil {
					b.Fatal(err)
				}
				for range 50 {
					exec(b, sb)
				}
				for i := range 3 {
					p := fmt.Sprintf("f%d.txt", i)
					if err := sb.WriteFile(ctx, p, []byte("data\n"), 0o644); err != nil {
						b.Fatal(err)
					}
					if got, err := sb.ReadFile(ctx, p); err != nil || string(got) != "data\n" {
						b.Fatalf("ReadFile %s = %q, %v", p, got, err)
					}
				}
				if files, err := sb.ListFiles(ctx, ".", true); err != nil || len(files) != 3 {
					b.Fatalf("ListFiles = %v, %v", files, err)
				}
				rc, err := sb.Snapshot(ctx)
				if err != nil {
					b.Fatal(err)
				}
				if _, err := io.Copy(io.Discard, rc); err != nil {
					b.Fatal(err)
				}
				rc.Close()
				if err := sb.Close(ctx); err != nil {
					b.Fatal(err)
				}
			}
			b.ReportMetric(float64(m.requests.Load())/float64(b.N), "apireq/task")
		}})
		execs = append(execs, impl{m.name, func(b *testing.B) {
			sb, err := m.backend.StartPod(ctx, cfg)
			if err != nil {
				b.Fatal(err)
			}
			defer sb.Close(ctx)
			exec(b, sb)
			m.requests.Store(0)
			for b.Loop() {
				exec(b, sb)
			}
			b.ReportMetric(float64(m.requests.Load())/float64(b.N), "apireq/exec")
		}})
	}
	runImpls(b, "task/", tasks...)
	runImpls(b, "exec/", execs...)
}
