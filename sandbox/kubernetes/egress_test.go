package kubernetes_test

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"

	"github.com/runner-dev/runner/internal/k8stest"
	"github.com/runner-dev/runner/sandbox"
	"github.com/runner-dev/runner/sandbox/kubernetes"
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

// Policies add up: another policy of the namespace that selects the
// sandbox's pod with rules of its own (the common "allow DNS" for every
// pod) would open what the deny-all closes, so a network:none sandbox is
// refused, naming that policy, and leaves nothing behind. The sandbox's own
// policy denies ingress as well as egress.
func TestAnotherPolicyThatOpensIsRefused(t *testing.T) {
	b := k8stest.Backend(t)
	cs := clientset(t)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()

	own := start(t, b, sandbox.Config{TaskID: "own-policy"})
	pol, err := cs.NetworkingV1().NetworkPolicies(b.Namespace()).Get(ctx, own.Name(), metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	types := fmt.Sprint(pol.Spec.PolicyTypes)
	if !strings.Contains(types, "Egress") || !strings.Contains(types, "Ingress") || len(pol.Spec.Egress)+len(pol.Spec.Ingress) > 0 {
		t.Errorf("the sandbox's policy is %s with %d egress and %d ingress rules; want Egress and Ingress with none", types, len(pol.Spec.Egress), len(pol.Spec.Ingress))
	}

	name := fmt.Sprintf("allow-dns-%d", os.Getpid())
	udp := corev1.ProtocolUDP
	dns := intstr.FromInt32(53)
	_, err = cs.NetworkingV1().NetworkPolicies(b.Namespace()).Create(ctx, &networkingv1.NetworkPolicy{
		ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec: networkingv1.NetworkPolicySpec{
			PolicyTypes: []networkingv1.PolicyType{networkingv1.PolicyTypeEgress},
			Egress:      []networkingv1.NetworkPolicyEgressRule{{Ports: []networkingv1.NetworkPolicyPort{{Protocol: &udp, Port: &dns}}}},
		},
	}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		cs.NetworkingV1().NetworkPolicies(b.Namespace()).Delete(context.Background(), name, metav1.DeleteOptions{})
	})
	_, err = b.Start(ctx, sandbox.Config{Image: k8stest.Image(t), RunID: runID, TaskID: "opened"})
	if !errors.Is(err, sandbox.ErrRefused) || !strings.Contains(err.Error(), name) {
		t.Fatalf("Start: %v; want a refusal naming policy %s", err, name)
	}
	for _, kind := range []string{"pods", "networkpolicies"} {
		var n int
		switch kind {
		case "pods":
			l, err := cs.CoreV1().Pods(b.Namespace()).List(ctx, metav1.ListOptions{LabelSelector: "dev.runner.task=opened"})
			if err != nil {
				t.Fatal(err)
			}
			n = len(l.Items)
		default:
			l, err := cs.NetworkingV1().NetworkPolicies(b.Namespace()).List(ctx, metav1.ListOptions{LabelSelector: "dev.runner.task=opened"})
			if err != nil {
				t.Fatal(err)
			}
			n = len(l.Items)
		}
		if n > 0 {
			t.Errorf("%d %s of the refused sandbox left behind", n, kind)
		}
	}
}

// Owner references do not cross namespaces: a runner whose own pod is not
// in the sandboxes' namespace is told so at once, rather than seeing every
// sandbox collected as an orphan.
func TestOwnerPodElsewhereIsRefused(t *testing.T) {
	opt := k8stest.Options(t)
	opt.OwnerPod = &kubernetes.OwnerPod{Name: fmt.Sprintf("runner-elsewhere-%d", os.Getpid()), UID: "0000"}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	_, err := kubernetes.Connect(ctx, opt)
	if err == nil || !strings.Contains(err.Error(), "is not in namespace "+opt.Namespace) {
		t.Fatalf("Connect: %v; want a refusal saying runner's pod is not in namespace %s", err, opt.Namespace)
	}
}
