// Package k8stest gives tests the test cluster's Kubernetes backend and
// the busybox test image imported into the cluster.
//
// The tests run when RUNNER_K8S_KUBECONFIG names the test cluster's
// kubeconfig (.ci/run sets it, see test/k8s); without it they skip, unless
// RUNNER_REQUIRE_K8S=1 (CI sets it), which turns the skip into a failure.
// RUNNER_K8S_IMAGE_IMPORT is the command that imports a Docker image
// (IMAGE as $1) into the cluster's container runtime.
package k8stest

import (
	"context"
	"fmt"
	"net"
	"os"
	"os/exec"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/runner-dev/runner/internal/dockertest"
	"github.com/runner-dev/runner/sandbox/kubernetes"
)

// Kubeconfig returns the test cluster's kubeconfig, or ends the test.
func Kubeconfig(t testing.TB) string {
	t.Helper()
	p := os.Getenv("RUNNER_K8S_KUBECONFIG")
	if p == "" {
		if os.Getenv("RUNNER_REQUIRE_K8S") == "1" {
			t.Fatal("RUNNER_REQUIRE_K8S=1 but RUNNER_K8S_KUBECONFIG names no test cluster (test/k8s/up brings one up)")
		}
		t.Skip("no test cluster: set RUNNER_K8S_KUBECONFIG to its kubeconfig (test/k8s/up brings one up)")
	}
	return p
}

// Namespace is where the tests' pods go.
func Namespace() string {
	if ns := os.Getenv("RUNNER_K8S_NAMESPACE"); ns != "" {
		return ns
	}
	return "default"
}

var (
	backendOnce sync.Once
	backend     *kubernetes.Backend
	backendErr  error
	probeOnce   sync.Once
	probeAddr   string
	probeErr    error
)

// Backend returns a shared backend on the test cluster, with the channel
// helper as its egress probe and a listener of this process, on the
// host's outward address, as the outside address a network:none pod must
// not reach.
func Backend(t testing.TB) *kubernetes.Backend {
	t.Helper()
	kc := Kubeconfig(t)
	helper := dockertest.ChannelHelper(t)
	addr := OutsideAddr(t)
	backendOnce.Do(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		backend, backendErr = kubernetes.Connect(ctx, kubernetes.Options{
			Kubeconfig: kc, Namespace: Namespace(), Helper: helper, EgressProbe: []string{addr},
		})
	})
	if backendErr != nil {
		t.Fatalf("connect to the test cluster: %v", backendErr)
	}
	return backend
}

// Options are the options Backend connects with, for a test that needs a
// backend of its own.
func Options(t testing.TB) kubernetes.Options {
	return kubernetes.Options{
		Kubeconfig: Kubeconfig(t), Namespace: Namespace(), Helper: dockertest.ChannelHelper(t),
		EgressProbe: []string{OutsideAddr(t)},
	}
}

// OutsideAddr is a TCP listener of the test process on the host's
// outward (non-loopback) address: outside the cluster, reachable from a
// pod that the policy does not stop. It accepts and closes connections.
func OutsideAddr(t testing.TB) string {
	t.Helper()
	probeOnce.Do(func() {
		ip, err := outwardIP()
		if err != nil {
			probeErr = err
			return
		}
		ln, err := net.Listen("tcp", net.JoinHostPort(ip, "0"))
		if err != nil {
			probeErr = err
			return
		}
		go func() {
			for {
				c, err := ln.Accept()
				if err != nil {
					return
				}
				c.Close()
			}
		}()
		probeAddr = ln.Addr().String()
	})
	if probeErr != nil {
		t.Fatalf("a listener outside the cluster: %v", probeErr)
	}
	return probeAddr
}

// outwardIP is the host's address on its default route.
func outwardIP() (string, error) {
	c, err := net.Dial("udp", "192.0.2.1:9") // no packet is sent
	if err != nil {
		return "", fmt.Errorf("find the host's outward address: %w", err)
	}
	defer c.Close()
	return c.LocalAddr().(*net.UDPAddr).IP.String(), nil
}

var (
	importMu sync.Mutex
	imported = map[string]error{}
)

// Image returns the busybox test image (dockertest.Busybox), imported into
// the cluster once per test process.
func Image(t testing.TB) string {
	t.Helper()
	Kubeconfig(t)
	img := dockertest.Busybox(t)
	importMu.Lock()
	defer importMu.Unlock()
	err, done := imported[img]
	if !done {
		err = importImage(img)
		imported[img] = err
	}
	if err != nil {
		t.Fatalf("import %s into the test cluster: %v", img, err)
	}
	return img
}

func importImage(img string) error {
	cmd := os.Getenv("RUNNER_K8S_IMAGE_IMPORT")
	if cmd == "" {
		return fmt.Errorf("RUNNER_K8S_IMAGE_IMPORT names no command that imports a Docker image into the cluster (IMAGE as $1)")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	out, err := exec.CommandContext(ctx, "sh", "-c", cmd+` "$1"`, "import", img).CombinedOutput()
	if err != nil {
		return fmt.Errorf("%s %s: %w: %s", cmd, img, err, strings.TrimSpace(string(out)))
	}
	return nil
}
