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
// fails closed. The helper is removed afterwards.
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
	_, _ = s.stream(ctx, s.command(helperDir, nil, "rm", "-f", helperPath), nil, io.Discard, io.Discard)
	return nil
}

// probeAddrs are the addresses a network:none pod must not reach: the API
// server as the client reaches it, the `kubernetes` service, and the
// configured outside addresses.
func (b *Backend) probeAddrs(ctx context.Context) []string {
	var addrs []string
	if u, err := url.Parse(b.rc.Host); err == nil && u.Host != "" {
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
