package kubernetes

import (
	"context"
	"fmt"
	"io"
	"net"
	"net/url"
	"os"
	"strings"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	k8slabels "k8s.io/apimachinery/pkg/labels"

	"github.com/runner-dev/runner/sandbox"
	"github.com/runner-dev/runner/sandbox/egressprobe"
)

// policySettle is how long the probe keeps trying while a reachable
// address may only mean that the cluster has not applied the new policy
// yet: enforcement takes a moment after the pod starts.
var policySettle = 10 * time.Second

// proveNoEgress copies the helper into the pod and runs its probe against
// the API server's addresses and Options.EgressProbe: every one must be
// unreachable, or the cluster does not enforce the policy and the sandbox
// fails closed. The helper is removed afterwards, unless the channel's
// start is to replace it.
func (s *Sandbox) proveNoEgress(ctx context.Context) error {
	bin, err := os.Open(s.b.opt.Helper)
	if err != nil {
		return fmt.Errorf("start sandbox: network none: the egress probe helper: %w", err)
	}
	defer bin.Close()
	var out tail
	code, err := s.stream(ctx, s.command(helperDir, nil, "sh", "-c", `cat >`+helperPath+` && chmod 0555 `+helperPath), bin, &out, &out)
	if err != nil {
		return s.execError(ctx, "start sandbox: copy the egress probe helper in", err)
	}
	if code != 0 {
		return fmt.Errorf("start sandbox: copy the egress probe helper in: exit code %d: %s", code, strings.TrimSpace(out.String()))
	}
	addrs := s.b.probeAddrs(ctx)
	if a := s.serviceAddr(ctx); a != "" && !contains(addrs, a) {
		addrs = append(addrs, a)
	}
	until := time.Now().Add(policySettle)
	for {
		var stdout, stderr tail
		code, err := s.stream(ctx, s.command(sandbox.Workdir, nil, append([]string{helperPath, egressprobe.Subcommand}, addrs...)...), nil, &stdout, &stderr)
		if err != nil {
			return s.execError(ctx, "start sandbox: run the egress probe", err)
		}
		if code != 0 {
			return fmt.Errorf("start sandbox: the egress probe: exit code %d: %s (is %s a static Linux build of runner or of cmd/sandbox-channel?)", code, strings.TrimSpace(stderr.String()), s.b.opt.Helper)
		}
		reached, err := egressprobe.Parse(stdout.String(), addrs)
		if err != nil {
			return fmt.Errorf("start sandbox: %w", err)
		}
		if len(reached) == 0 {
			break
		}
		if time.Now().After(until) {
			return refused("start sandbox: the cluster does not enforce NetworkPolicy egress rules: a network:none pod reached %s (tried for %s); use a CNI that enforces them, or network: bridge",
				strings.Join(reached, ", "), policySettle)
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("start sandbox: egress probe: %w", ctx.Err())
		case <-time.After(500 * time.Millisecond):
		}
	}
	if !s.b.channelWanted() {
		// With the channel, the helper's start replaces the file.
		_, _ = s.stream(ctx, s.command(helperDir, nil, "rm", "-f", helperPath), nil, io.Discard, io.Discard)
	}
	return nil
}

// probeAddrs are the addresses a network:none pod must not reach: the API
// server as the client reaches it, the `kubernetes` service, and the
// configured outside addresses.
func (b *Backend) probeAddrs(ctx context.Context) []string {
	var addrs []string
	// A loopback address (kind, minikube, a tunnel, kubectl proxy) means
	// the pod's own loopback from inside: proving nothing, it is left out;
	// the kubernetes service's address, as the pod sees it, stands in.
	if u, err := url.Parse(b.rc.Host); err == nil && u.Host != "" && !isLoopback(u.Hostname()) {
		host, port := u.Hostname(), u.Port()
		if port == "" {
			port = "443"
			if u.Scheme == "http" {
				port = "80"
			}
		}
		addrs = append(addrs, net.JoinHostPort(host, port))
	}
	if svc, err := b.cs.CoreV1().Services("default").Get(ctx, "kubernetes", metav1.GetOptions{}); err == nil && svc.Spec.ClusterIP != "" && svc.Spec.ClusterIP != "None" {
		addrs = append(addrs, net.JoinHostPort(svc.Spec.ClusterIP, "443"))
	}
	for _, a := range b.opt.EgressProbe {
		if !contains(addrs, a) {
			addrs = append(addrs, a)
		}
	}
	return addrs
}

// noOtherPolicyOpens refuses a network:none sandbox whose pod (labels
// podLabels) another NetworkPolicy of the namespace selects with rules of
// its own: policies add up, so a rule that lets anything in or out (the
// common "allow DNS" for every pod) would open what the sandbox's deny-all
// closes, and the probe cannot try every port and protocol.
func (b *Backend) noOtherPolicyOpens(ctx context.Context, podLabels map[string]string, own string) error {
	pols, err := b.cs.NetworkingV1().NetworkPolicies(b.namespace).List(ctx, metav1.ListOptions{})
	if err != nil {
		return b.explain("list network policies", "networkpolicies", err)
	}
	var open []string
	for _, p := range pols.Items {
		if p.Name == own || len(p.Spec.Egress) == 0 && len(p.Spec.Ingress) == 0 {
			continue
		}
		sel, err := metav1.LabelSelectorAsSelector(&p.Spec.PodSelector)
		if err != nil || sel.Matches(k8slabels.Set(podLabels)) {
			open = append(open, p.Name)
		}
	}
	if len(open) > 0 {
		return refused("start sandbox: network none: the network policies %s of namespace %s also select the sandbox's pods and allow traffic, which a deny-all policy cannot take back; use a namespace where no policy with rules selects every pod, or network: bridge",
			strings.Join(open, ", "), b.namespace)
	}
	return nil
}

// isLoopback reports whether host is localhost or a loopback address.
func isLoopback(host string) bool {
	if host == "localhost" {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}

// serviceAddr is the API server's address as the pod sees it: the
// kubernetes service, which the kubelet gives every container as
// KUBERNETES_SERVICE_HOST and _PORT. It is read from inside before any
// agent process exists; "" when the pod has none.
func (s *Sandbox) serviceAddr(ctx context.Context) string {
	var out, errOut tail
	code, err := s.stream(ctx, s.command(sandbox.Workdir, nil, "sh", "-c", `printf '%s:%s' "$KUBERNETES_SERVICE_HOST" "$KUBERNETES_SERVICE_PORT"`), nil, &out, &errOut)
	if err != nil || code != 0 {
		return ""
	}
	host, port, err := net.SplitHostPort(strings.TrimSpace(out.String()))
	if err != nil || net.ParseIP(host) == nil || port == "" {
		return ""
	}
	return net.JoinHostPort(host, port)
}
