package main

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/runner-dev/runner/internal/dockertest"
	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/httpstream"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	"k8s.io/client-go/tools/remotecommand"
)

func TestBlocked(t *testing.T) {
	deny := func(ns, name string, sel map[string]string) *networkingv1.NetworkPolicy {
		return &networkingv1.NetworkPolicy{
			ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name},
			Spec: networkingv1.NetworkPolicySpec{
				PodSelector: metav1.LabelSelector{MatchLabels: sel},
				PolicyTypes: []networkingv1.PolicyType{networkingv1.PolicyTypeEgress},
			},
		}
	}
	pod := func(ns, name, ip string, l map[string]string) *corev1.Pod {
		return &corev1.Pod{
			ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name, Labels: l},
			Status:     corev1.PodStatus{Phase: corev1.PodRunning, PodIP: ip, PodIPs: []corev1.PodIP{{IP: ip}}},
		}
	}
	withRules := deny("a", "allow-dns", map[string]string{"task": "2"})
	withRules.Spec.Egress = []networkingv1.NetworkPolicyEgressRule{{}}
	ingressOnly := deny("a", "ingress", nil)
	ingressOnly.Spec.PolicyTypes = []networkingv1.PolicyType{networkingv1.PolicyTypeIngress}
	hostNet := pod("a", "host", "192.0.2.2", map[string]string{"task": "1"})
	hostNet.Spec.HostNetwork = true
	done := pod("a", "done", "10.244.0.9", map[string]string{"task": "1"})
	done.Status.Phase = corev1.PodSucceeded

	pols := []*networkingv1.NetworkPolicy{
		deny("a", "deny-1", map[string]string{"task": "1"}),
		deny("a", "deny-2", map[string]string{"task": "2"}), withRules,
		ingressOnly,
		deny("b", "deny-all", nil),
	}
	pods := []*corev1.Pod{
		pod("a", "one", "10.244.0.2", map[string]string{"task": "1"}),
		pod("a", "two", "10.244.0.3", map[string]string{"task": "2"}),
		pod("a", "three", "10.244.0.4", map[string]string{"task": "3"}),
		pod("b", "any", "10.244.0.5", nil),
		hostNet, done,
	}
	ips, warnings := Blocked(pols, pods)
	if got, want := strings.Join(ips, ","), "10.244.0.2,10.244.0.5"; got != want {
		t.Errorf("blocked %s, want %s", got, want)
	}
	if len(warnings) != 1 || !strings.Contains(warnings[0], "a/two") || !strings.Contains(warnings[0], "allow-dns") {
		t.Errorf("warnings %q, want one about a/two and allow-dns", warnings)
	}
}

// cluster returns the test cluster's client and config, from the
// kubeconfig that RUNNER_K8S_KUBECONFIG names. Without it the test skips,
// unless RUNNER_REQUIRE_K8S=1 (CI sets both).
func cluster(t *testing.T) (*kubernetes.Clientset, *rest.Config) {
	t.Helper()
	path := os.Getenv("RUNNER_K8S_KUBECONFIG")
	if path == "" {
		if os.Getenv("RUNNER_REQUIRE_K8S") == "1" {
			t.Fatal("RUNNER_REQUIRE_K8S=1 but RUNNER_K8S_KUBECONFIG names no test cluster (test/k8s/up brings one up)")
		}
		t.Skip("no test cluster: RUNNER_K8S_KUBECONFIG is not set (test/k8s/up brings one up)")
	}
	cfg, err := clientcmd.BuildConfigFromFlags("", path)
	if err != nil {
		t.Fatalf("RUNNER_K8S_KUBECONFIG=%s: %v", path, err)
	}
	c, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		t.Fatal(err)
	}
	return c, cfg
}

// greeter listens on addr and greets every connection with a line naming
// itself, so that a connection from a pod proves a full round trip.
func greeter(t *testing.T, ip string) string {
	t.Helper()
	l, err := net.Listen("tcp", net.JoinHostPort(ip, "0"))
	if err != nil {
		t.Fatalf("listen on %s: %v", ip, err)
	}
	t.Cleanup(func() { l.Close() })
	go func() {
		for {
			c, err := l.Accept()
			if err != nil {
				return
			}
			fmt.Fprintf(c, "hello from %s\n", l.Addr())
			c.Close()
		}
	}()
	return l.Addr().String()
}

// TestDenyAllEgressCutsPodOff shows, from inside a pod, that a deny-all
// egress NetworkPolicy stops its connections to the node's own address and
// to an address outside the cluster (the docker0 bridge's), that they work
// without the policy, and that the enforcer's rules go with the policy and
// with the pod.
func TestDenyAllEgressCutsPodOff(t *testing.T) {
	client, cfg := cluster(t)
	if out, err := exec.Command("../netpol-ctl", "status").CombinedOutput(); err != nil {
		t.Fatalf("the test cluster's NetworkPolicy enforcer is not running (test/k8s/netpol-ctl start): %s", out)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()

	image := dockertest.Busybox(t)
	importer := os.Getenv("RUNNER_K8S_IMAGE_IMPORT")
	if importer == "" {
		importer, _ = filepath.Abs("../import-image")
	}
	if out, err := exec.CommandContext(ctx, importer, image).CombinedOutput(); err != nil {
		t.Fatalf("import %s into the cluster (%s): %v\n%s", image, importer, err, out)
	}

	nodes, err := client.CoreV1().Nodes().List(ctx, metav1.ListOptions{})
	if err != nil || len(nodes.Items) == 0 {
		t.Fatalf("list nodes: %v (%d)", err, len(nodes.Items))
	}
	var nodeIP string
	for _, a := range nodes.Items[0].Status.Addresses {
		if a.Type == corev1.NodeInternalIP {
			nodeIP = a.Address
		}
	}
	if nodeIP == "" {
		t.Fatal("the node has no InternalIP")
	}
	docker0, err := net.InterfaceByName("docker0")
	if err != nil {
		t.Fatalf("the docker0 bridge stands for an address outside the cluster: %v", err)
	}
	addrs, _ := docker0.Addrs()
	var outsideIP string
	for _, a := range addrs {
		if n, ok := a.(*net.IPNet); ok && n.IP.To4() != nil {
			outsideIP = n.IP.String()
		}
	}
	if outsideIP == "" {
		t.Fatal("docker0 has no IPv4 address")
	}
	targets := []string{greeter(t, nodeIP), greeter(t, outsideIP)}

	ns := fmt.Sprintf("netpol-test-%d", time.Now().UnixNano())
	if _, err := client.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		client.CoreV1().Namespaces().Delete(context.Background(), ns, metav1.DeleteOptions{})
	})
	// Pods need the namespace's default service account, which the
	// controller manager makes.
	waitFor(ctx, t, "the default service account", func() bool {
		_, err := client.CoreV1().ServiceAccounts(ns).Get(ctx, "default", metav1.GetOptions{})
		return err == nil
	})

	labels := map[string]string{"app": "netpol-test"}
	no := false
	zero := int64(0)
	pod, err := client.CoreV1().Pods(ns).Create(ctx, &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: "probe", Labels: labels},
		Spec: corev1.PodSpec{
			AutomountServiceAccountToken:  &no,
			TerminationGracePeriodSeconds: &zero,
			RestartPolicy:                 corev1.RestartPolicyNever,
			Containers: []corev1.Container{{
				Name: "probe", Image: image, ImagePullPolicy: corev1.PullNever,
				Command: []string{"sleep", "3600"},
			}},
		},
	}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	waitFor(ctx, t, "the pod running", func() bool {
		pod, err = client.CoreV1().Pods(ns).Get(ctx, "probe", metav1.GetOptions{})
		return err == nil && pod.Status.Phase == corev1.PodRunning && pod.Status.PodIP != ""
	})

	reach := func() []bool {
		var r []bool
		for _, a := range targets {
			host, port, _ := net.SplitHostPort(a)
			out, _ := podExec(ctx, client, cfg, ns, "probe", "nc", "-w", "2", host, port)
			r = append(r, strings.Contains(out, "hello from "+a))
		}
		return r
	}
	all := func(r []bool, want bool) bool {
		for _, v := range r {
			if v != want {
				return false
			}
		}
		return true
	}

	if r := reach(); !all(r, true) {
		t.Fatalf("without a policy, the pod reached %v of %v; want all", r, targets)
	}

	policy := &networkingv1.NetworkPolicy{
		ObjectMeta: metav1.ObjectMeta{Name: "deny-egress"},
		Spec: networkingv1.NetworkPolicySpec{
			PodSelector: metav1.LabelSelector{MatchLabels: labels},
			PolicyTypes: []networkingv1.PolicyType{networkingv1.PolicyTypeEgress},
		},
	}
	if _, err := client.NetworkingV1().NetworkPolicies(ns).Create(ctx, policy, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	waitFor(ctx, t, "the pod's IP in the enforcer's chain", func() bool { return chainHas(pod.Status.PodIP) })
	if r := reach(); !all(r, false) {
		t.Fatalf("with a deny-all egress policy, the pod reached %v of %v; want none", r, targets)
	}

	if err := client.NetworkingV1().NetworkPolicies(ns).Delete(ctx, policy.Name, metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	waitFor(ctx, t, "the pod's rule gone with its policy", func() bool { return !chainHas(pod.Status.PodIP) })
	if r := reach(); !all(r, true) {
		t.Fatalf("after the policy was deleted, the pod reached %v of %v; want all", r, targets)
	}

	// The rule goes with the pod too.
	if _, err := client.NetworkingV1().NetworkPolicies(ns).Create(ctx, policy, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	waitFor(ctx, t, "the pod's IP in the enforcer's chain again", func() bool { return chainHas(pod.Status.PodIP) })
	if err := client.CoreV1().Pods(ns).Delete(ctx, "probe", metav1.DeleteOptions{GracePeriodSeconds: &zero}); err != nil {
		t.Fatal(err)
	}
	waitFor(ctx, t, "the pod's rule gone with the pod", func() bool { return !chainHas(pod.Status.PodIP) })
}

// chainHas reports whether the enforcer's chain drops traffic from ip.
func chainHas(ip string) bool {
	out, err := exec.Command("iptables", "-w", "-S", "RUNNER-K8S-NETPOL").Output()
	if err != nil {
		return false
	}
	sc := bufio.NewScanner(bytes.NewReader(out))
	for sc.Scan() {
		if strings.Contains(sc.Text(), "-s "+ip+"/32 ") && strings.HasSuffix(sc.Text(), "-j DROP") {
			return true
		}
	}
	return false
}

// waitFor polls cond until it holds, or fails the test naming what.
func waitFor(ctx context.Context, t *testing.T, what string, cond func() bool) {
	t.Helper()
	ctx, cancel := context.WithTimeout(ctx, 60*time.Second)
	defer cancel()
	for !cond() {
		select {
		case <-ctx.Done():
			t.Fatalf("waiting for %s: %v", what, ctx.Err())
		case <-time.After(100 * time.Millisecond):
		}
	}
}

// podExec runs a command in the pod's container through the API server
// (WebSocket, SPDY on an upgrade failure) and returns its output.
func podExec(ctx context.Context, client *kubernetes.Clientset, cfg *rest.Config, ns, pod string, cmd ...string) (string, error) {
	req := client.CoreV1().RESTClient().Post().Resource("pods").Namespace(ns).Name(pod).SubResource("exec").
		VersionedParams(&corev1.PodExecOptions{Command: cmd, Stdout: true, Stderr: true}, scheme.ParameterCodec)
	ws, err := remotecommand.NewWebSocketExecutor(cfg, "GET", req.URL().String())
	if err != nil {
		return "", err
	}
	spdy, err := remotecommand.NewSPDYExecutor(cfg, "POST", req.URL())
	if err != nil {
		return "", err
	}
	exe, err := remotecommand.NewFallbackExecutor(ws, spdy, httpstream.IsUpgradeFailure)
	if err != nil {
		return "", err
	}
	// Two buffers: the executor copies the two streams concurrently.
	var stdout, stderr bytes.Buffer
	err = exe.StreamWithContext(ctx, remotecommand.StreamOptions{Stdout: &stdout, Stderr: &stderr})
	return stdout.String() + stderr.String(), err
}
