package kubernetes_test

import (
	"context"
	"errors"
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/runner-dev/runner/internal/k8stest"
	"github.com/runner-dev/runner/sandbox"
)

// With the cluster's policy enforcer running, a network:none sandbox
// starts, and cannot reach the outside address, while a bridge one can.
func TestNetworkNoneHoldsWithPolicy(t *testing.T) {
	b := k8stest.Backend(t)
	outside := k8stest.OutsideAddr(t)
	host, port, _ := strings.Cut(outside, ":")
	probe := "nc -w 2 " + host + " " + port + " </dev/null && echo connected"
	none := start(t, b, sandbox.Config{})
	if res := run(t, none, probe, sandbox.ExecOptions{Timeout: 20 * time.Second}); strings.Contains(res.Stdout, "connected") {
		t.Errorf("network none reached %s: %+v", outside, res)
	}
	bridge := start(t, b, sandbox.Config{Network: "bridge"})
	if res := run(t, bridge, probe, sandbox.ExecOptions{Timeout: 20 * time.Second}); !strings.Contains(res.Stdout, "connected") {
		t.Errorf("network bridge did not reach %s (the probe address is wrong, or the host's firewall stops it): %+v", outside, res)
	}
}

// netpolCtl runs the test cluster's control of its policy enforcer
// (RUNNER_K8S_NETPOL_CTL stop|start).
func netpolCtl(t *testing.T, verb string) {
	t.Helper()
	ctl := os.Getenv("RUNNER_K8S_NETPOL_CTL")
	if ctl == "" {
		t.Fatal("RUNNER_K8S_NETPOL_CTL names no command that stops and starts the test cluster's NetworkPolicy enforcer")
	}
	if out, err := exec.Command("sh", "-c", ctl+` "$1"`, "netpol", verb).CombinedOutput(); err != nil {
		t.Fatalf("%s %s: %v\n%s", ctl, verb, err, out)
	}
}

// Without enforcement, a network:none sandbox does not start: the error
// names the cause, and neither pod nor policy is left.
func TestNetworkNoneFailsClosedWithoutEnforcement(t *testing.T) {
	b := k8stest.Backend(t)
	img := k8stest.Image(t)
	netpolCtl(t, "stop")
	t.Cleanup(func() { netpolCtl(t, "start") })
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	_, err := b.Start(ctx, sandbox.Config{Image: img, RunID: runID, TaskID: "unenforced"})
	if !errors.Is(err, sandbox.ErrRefused) || !strings.Contains(err.Error(), "does not enforce NetworkPolicy egress rules") {
		t.Fatalf("Start: %v; want a refusal naming the missing enforcement", err)
	}
	cs := clientset(t)
	pods, err := cs.CoreV1().Pods(b.Namespace()).List(ctx, metav1.ListOptions{LabelSelector: "dev.runner.task=unenforced"})
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range pods.Items {
		if p.DeletionTimestamp == nil {
			t.Errorf("pod %s left behind", p.Name)
		}
	}
	pols, err := cs.NetworkingV1().NetworkPolicies(b.Namespace()).List(ctx, metav1.ListOptions{LabelSelector: "dev.runner.task=unenforced"})
	if err != nil {
		t.Fatal(err)
	}
	if len(pols.Items) > 0 {
		t.Errorf("policies left behind: %d", len(pols.Items))
	}
}
