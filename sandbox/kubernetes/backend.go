// Package kubernetes is the sandbox backend that runs each sandbox as one
// hardened Pod of a Kubernetes cluster, reached through its API server with
// client-go: commands and files travel over exec (WebSocket, SPDY only
// where the upgrade fails), or, with Options.Channel, over one long exec
// to the sandbox's helper; the workspace as tar streams over exec, and
// network "none" is a deny-all egress NetworkPolicy that a probe from inside
// the pod must find enforced, or the sandbox does not start.
package kubernetes

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"slices"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/version"
	k8s "k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"

	"github.com/runner-dev/runner/sandbox"
	"github.com/runner-dev/runner/sandbox/channel"
)

// Options say which cluster and namespace to use.
type Options struct {
	Kubeconfig string // "" = $KUBECONFIG, ~/.kube/config, or in-cluster config
	Context    string // kubeconfig context, "" = current
	Namespace  string // "" = the kubeconfig's namespace, else "default"
	// EgressProbe are addresses (host:port) OUTSIDE the cluster that a
	// network:none pod must not reach; the API server's own address is
	// always probed too. Empty means DefaultEgressProbe.
	EgressProbe []string
	// Helper is a static Linux executable that runs the sandbox's probe
	// and its command channel (runner itself, or cmd/sandbox-channel) when
	// given their subcommands;
	// "" = no helper: network "none" then cannot be proven, and Start
	// fails closed.
	Helper string
	// Channel makes every sandbox serve its commands and file operations
	// through the command channel: Helper, started once in the pod, on one
	// exec's stream (see channel.go). It needs Helper. Without it, each
	// command and file operation is an exec of the API server.
	Channel bool
	// OwnerPod, when set, is the pod runner itself runs in (from the
	// downward API: RUNNER_POD_NAME / RUNNER_POD_UID): every pod and policy
	// runner makes gets an ownerReference to it, so that the cluster
	// collects them if runner dies. It must be in Namespace.
	OwnerPod *OwnerPod
	// WrapTransport, when set, wraps the client's HTTP transport (to count
	// or trace the requests to the API server).
	WrapTransport func(http.RoundTripper) http.RoundTripper
}

// OwnerPod names the pod runner runs in.
type OwnerPod struct{ Name, UID string }

// DefaultEgressProbe is an address outside any cluster that a sandbox
// with network "none" must not reach (a public DNS server's HTTPS port).
var DefaultEgressProbe = []string{"1.1.1.1:443"}

// Backend is a connection to a cluster's API server, in one namespace.
type Backend struct {
	cs        k8s.Interface
	rc        *rest.Config
	namespace string
	opt       Options
	owner     sandbox.Owner
}

var _ sandbox.Backend = (*Backend)(nil)

// Connect loads the client configuration and checks that the API server
// answers and lets runner list pods in the namespace.
func Connect(ctx context.Context, opt Options) (*Backend, error) {
	rules := clientcmd.NewDefaultClientConfigLoadingRules()
	if opt.Kubeconfig != "" {
		rules.ExplicitPath = opt.Kubeconfig
	}
	cc := clientcmd.NewNonInteractiveDeferredLoadingClientConfig(rules, &clientcmd.ConfigOverrides{CurrentContext: opt.Context})
	rc, err := cc.ClientConfig()
	if err != nil {
		return nil, fmt.Errorf("kubernetes: load the client configuration (kubeconfig %s): %w", describeKubeconfig(opt.Kubeconfig), err)
	}
	ns := opt.Namespace
	if ns == "" {
		if ns, _, err = cc.Namespace(); err != nil || ns == "" {
			ns = "default"
		}
	}
	if opt.Channel {
		if opt.Helper == "" {
			return nil, fmt.Errorf("kubernetes: the command channel needs a helper (Options.Helper)")
		}
		if err := channel.CheckBinary(opt.Helper); err != nil {
			return nil, fmt.Errorf("kubernetes: the command channel: %w", err)
		}
	}
	rc = rest.CopyConfig(rc)
	rc.UserAgent = "runner"
	if opt.WrapTransport != nil {
		rc.Wrap(opt.WrapTransport)
	}
	if rc.QPS == 0 {
		rc.QPS, rc.Burst = 50, 100
	}
	cs, err := k8s.NewForConfig(rc)
	if err != nil {
		return nil, fmt.Errorf("kubernetes: client for %s: %w", rc.Host, err)
	}
	b := &Backend{cs: cs, rc: rc, namespace: ns, opt: opt, owner: sandbox.Self()}
	if len(b.opt.EgressProbe) == 0 {
		b.opt.EgressProbe = DefaultEgressProbe
	}
	ctx, cancel := context.WithTimeout(ctx, 15*time.Second)
	defer cancel()
	if _, err := b.serverVersion(ctx); err != nil {
		return nil, b.explain("reach the API server", "", err)
	}
	if _, err := cs.CoreV1().Pods(ns).List(ctx, metav1.ListOptions{Limit: 1}); err != nil {
		return nil, b.explain("list pods", "pods", err)
	}
	if o := opt.OwnerPod; o != nil {
		// Owner references do not cross namespaces: the garbage collector
		// would take a sandbox whose owner is elsewhere for an orphan and
		// delete it at once.
		pod, err := cs.CoreV1().Pods(ns).Get(ctx, o.Name, metav1.GetOptions{})
		if apierrors.IsNotFound(err) {
			return nil, fmt.Errorf("kubernetes: runner's own pod %s (RUNNER_POD_NAME) is not in namespace %s: the sandboxes' owner must be in their namespace; run runner there, or leave RUNNER_POD_NAME and RUNNER_POD_UID unset", o.Name, ns)
		}
		if err != nil {
			return nil, b.explain("get runner's own pod "+o.Name, "pods", err)
		}
		if string(pod.UID) != o.UID {
			return nil, fmt.Errorf("kubernetes: runner's own pod %s in namespace %s has uid %s, not %s (RUNNER_POD_UID)", o.Name, ns, pod.UID, o.UID)
		}
	}
	return b, nil
}

// serverVersion asks the API server for its version, within ctx (the
// discovery client's own call takes no context and could wait forever on
// a server that accepts connections but never answers).
func (b *Backend) serverVersion(ctx context.Context) (*version.Info, error) {
	raw, err := b.cs.Discovery().RESTClient().Get().AbsPath("/version").Do(ctx).Raw()
	if err != nil {
		return nil, err
	}
	var v version.Info
	if err := json.Unmarshal(raw, &v); err != nil {
		return nil, fmt.Errorf("the API server's version: %w", err)
	}
	return &v, nil
}

func describeKubeconfig(p string) string {
	if p == "" {
		return "from $KUBECONFIG, ~/.kube/config or in-cluster"
	}
	return p
}

// OwnedBy returns a Backend sharing b's connection whose sandboxes name o
// as their owner instead of this process. Close b, not the Backend
// returned.
func (b *Backend) OwnedBy(o sandbox.Owner) *Backend {
	c := *b
	c.owner = o
	return &c
}

// Namespace is the namespace of b's pods.
func (b *Backend) Namespace() string { return b.namespace }

// Close releases nothing: client-go's connections close with the process.
// Sandboxes keep running.
func (b *Backend) Close() error { return nil }

// Build is not offered: the cluster pulls images from a registry.
func (b *Backend) Build(context.Context, sandbox.BuildOptions) error {
	return fmt.Errorf("build an image on kubernetes: %w: build it with Docker and push it to a registry the cluster pulls from", sandbox.ErrUnsupported)
}

// CheckImage cannot ask the nodes whether they have an image without
// starting a pod: it accepts every reference, and Start reports an image
// the cluster cannot pull as an *sandbox.ImageError within seconds.
func (b *Backend) CheckImage(ctx context.Context, ref string) error { return nil }

// Info describes the cluster: the API server's URL and version, and the
// RuntimeClasses a sandbox may name ("" is the nodes' default).
func (b *Backend) Info(ctx context.Context) (sandbox.Info, error) {
	v, err := b.serverVersion(ctx)
	if err != nil {
		return sandbox.Info{}, b.explain("describe the cluster", "", err)
	}
	rts, err := b.runtimes(ctx)
	if err != nil {
		return sandbox.Info{}, err
	}
	return sandbox.Info{Kind: "kubernetes", Address: b.rc.Host, Version: v.GitVersion, Runtimes: rts, DefaultRuntime: ""}, nil
}

// runtimes lists the cluster's RuntimeClasses, and "" for the default.
func (b *Backend) runtimes(ctx context.Context) ([]string, error) {
	list, err := b.cs.NodeV1().RuntimeClasses().List(ctx, metav1.ListOptions{})
	if err != nil {
		return nil, b.explain("list runtime classes", "runtimeclasses", err)
	}
	out := []string{""}
	for _, rc := range list.Items {
		out = append(out, rc.Name)
	}
	slices.Sort(out)
	return out, nil
}
