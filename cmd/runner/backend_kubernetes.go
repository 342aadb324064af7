package main

import (
	"context"
	"fmt"
	"log/slog"
	"strings"

	"github.com/runner-dev/runner/internal/cli"
	"github.com/runner-dev/runner/sandbox"
	"github.com/runner-dev/runner/sandbox/kubernetes"
)

// kubernetesOptions are the Kubernetes backend's options from the flags
// and the environment: the sandbox helper beside runner (sandboxHelper) as
// the egress probe's helper and, unless RUNNER_CHANNEL=0 (channelWanted,
// as for Docker), the command channel's; and the pod runner runs in from
// the downward API (RUNNER_POD_NAME, RUNNER_POD_UID).
func kubernetesOptions(b *backendFlags, getenv func(string) string, log *slog.Logger) (kubernetes.Options, error) {
	opt := kubernetes.Options{Context: b.kubeContext, Namespace: b.namespace, EgressProbe: b.egressProbe}
	on, err := channelWanted(getenv)
	if err != nil {
		return opt, cli.Usagef("%v", err)
	}
	if bin, err := sandboxHelper(); err == nil {
		opt.Helper, opt.Channel = bin, on
	} else {
		log.Info("no egress probe helper: a network none sandbox cannot start on the cluster", "why", err.Error())
		if on {
			log.Info("sandboxes run each command with an exec of their own", "why", err.Error())
		}
	}
	name, uid := getenv("RUNNER_POD_NAME"), getenv("RUNNER_POD_UID")
	switch {
	case name != "" && uid != "":
		opt.OwnerPod = &kubernetes.OwnerPod{Name: name, UID: uid}
	case name != "" || uid != "":
		return opt, cli.Usagef("RUNNER_POD_NAME and RUNNER_POD_UID name the pod runner runs in: set both (from the downward API: metadata.name, metadata.uid) or neither")
	}
	return opt, nil
}

// connectKubernetes connects to the cluster of the kubeconfig.
func connectKubernetes(ctx context.Context, log *slog.Logger, b *backendFlags, getenv func(string) string) (sandbox.Backend, error) {
	opt, err := kubernetesOptions(b, getenv, log)
	if err != nil {
		return nil, err
	}
	k, err := kubernetes.Connect(ctx, opt)
	if err != nil {
		return nil, &cli.ExitError{Code: cli.ExitUsage, Err: err}
	}
	owner := ""
	if opt.OwnerPod != nil {
		owner = opt.OwnerPod.Name
	}
	log.Debug("connected to the Kubernetes cluster", "namespace", k.Namespace(), "owner_pod", owner)
	return k, nil
}

// kubernetesFindings are what the doctor adds for a cluster: the
// namespace, and each permission the backend needs.
func kubernetesFindings(ctx context.Context, b sandbox.Backend) []finding {
	k, ok := b.(*kubernetes.Backend)
	if !ok {
		return nil
	}
	found := []finding{{Check: "namespace", OK: true, Required: true, Detail: k.Namespace()}}
	perms, err := k.Permissions(ctx)
	if err != nil {
		return append(found, finding{Check: "permissions", Detail: err.Error(), Required: true})
	}
	for _, p := range perms {
		res := p.Resource
		if p.Subresource != "" {
			res += "/" + p.Subresource
		}
		f := finding{Check: fmt.Sprintf("may %s %s", p.Verb, res), OK: p.Allowed, Required: p.Resource != "runtimeclasses"}
		if p.Allowed {
			f.Detail = "allowed"
		} else {
			f.Detail = strings.TrimSpace("denied " + p.Reason)
			f.Advice = "grant it: see examples/kubernetes/role.yaml"
		}
		found = append(found, f)
	}
	return found
}
