package dockernet

import (
	"bufio"
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"strconv"
	"strings"
	"sync"
	"time"

	cerrdefs "github.com/containerd/errdefs"
	"github.com/moby/moby/api/pkg/stdcopy"
	"github.com/moby/moby/api/types/container"
	"github.com/moby/moby/client"

	"github.com/runner-dev/runner/internal/egress"
)

// Labels runner puts on what this package creates, besides the caller's.
const (
	// LabelRole marks the proxy container and the internal network.
	LabelRole = "dev.runner.egress"
	roleProxy = "proxy"
	roleNet   = "network"
)

// ProxyPort is the port the proxy listens on inside its container.
const ProxyPort = 3128

// readyTimeout bounds the wait for the proxy to listen.
const readyTimeout = 60 * time.Second

// Options describe the egress of one sandbox.
type Options struct {
	// Allow is the allowlist, as a task writes it (see egress.ParseRule).
	Allow []string
	// Name prefixes the names of the network and the proxy container.
	Name string
	// Labels go on the network and the proxy container, so that a cleanup
	// that knows them (the run, the owner, the deadline) finds both.
	Labels map[string]string
	// Upstream is the network with a route out the proxy is attached to;
	// empty means the engine's default "bridge".
	Upstream string
	// Binary is the executable run as the proxy, with "egress-proxy" as
	// its first argument; empty means this process's executable.
	Binary string
	// Report receives every decision of the proxy, in order, from one
	// goroutine. Nil discards them.
	Report func(egress.Event)
}

// Egress is a running proxy and the internal network it guards.
type Egress struct {
	cli      *client.Client
	network  string // name of the internal network
	proxyID  string
	proxyURL string

	done      chan struct{} // closed when the proxy's output ends
	mu        sync.Mutex
	closing   bool
	stopErr   error
	stderr    tailBuffer
	closeOnce sync.Once
	closeErr  error
}

// Network is the name of the internal network the sandbox must join.
func (e *Egress) Network() string { return e.network }

// ProxyURL is the proxy's address as seen from the internal network.
func (e *Egress) ProxyURL() string { return e.proxyURL }

// Env is what the sandbox's environment needs for tools to use the proxy.
func (e *Egress) Env() []string {
	noProxy := "localhost,127.0.0.1,::1"
	return []string{
		"HTTP_PROXY=" + e.proxyURL, "http_proxy=" + e.proxyURL,
		"HTTPS_PROXY=" + e.proxyURL, "https_proxy=" + e.proxyURL,
		"NO_PROXY=" + noProxy, "no_proxy=" + noProxy,
	}
}

// Done is closed when the proxy has stopped, for whatever reason; Err
// then says why, unless Close stopped it.
func (e *Egress) Done() <-chan struct{} { return e.done }

// Err is nil while the proxy runs or after Close, else why it stopped.
func (e *Egress) Err() error {
	select {
	case <-e.done:
	default:
		return nil
	}
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.closing {
		return nil
	}
	return e.stopErr
}

// ErrProxyStopped wraps the error of a proxy that stopped before Close.
var ErrProxyStopped = errors.New("egress proxy stopped")

// Start creates the internal network and the proxy on it, and returns once
// the proxy listens. On error, everything it created is removed.
func Start(ctx context.Context, cli *client.Client, opt Options) (_ *Egress, err error) {
	allow, err := egress.ParseAllowlist(opt.Allow)
	if err != nil {
		return nil, fmt.Errorf("egress: %w", err)
	}
	if len(allow.Rules()) == 0 {
		return nil, errors.New("egress: the allowlist is empty")
	}
	bin := opt.Binary
	if bin == "" {
		if bin, err = os.Executable(); err != nil {
			return nil, fmt.Errorf("egress: %w", err)
		}
	}
	image, err := ensureImage(ctx, cli, bin)
	if err != nil {
		return nil, err
	}
	upstream := opt.Upstream
	if upstream == "" {
		upstream = "bridge"
	}
	suffix := randomID()
	e := &Egress{cli: cli, network: opt.Name + "-egress-" + suffix, done: make(chan struct{})}
	defer func() {
		if err != nil {
			e.Close(ctx)
		}
	}()
	netLabels := withLabel(opt.Labels, LabelRole, roleNet)
	if _, err := cli.NetworkCreate(ctx, e.network, client.NetworkCreateOptions{
		Driver: "bridge", Internal: true, Labels: netLabels,
		// No address of the host on the bridge: an internal network still
		// gives its containers a gateway, and through it the host's own
		// services would be reachable.
		Options: map[string]string{"com.docker.network.bridge.inhibit_ipv4": "true"},
	}); err != nil {
		close(e.done)
		return nil, fmt.Errorf("egress: create network: %w", err)
	}
	inspected, err := cli.NetworkInspect(ctx, e.network, client.NetworkInspectOptions{})
	if err != nil || len(inspected.Network.IPAM.Config) == 0 || !inspected.Network.IPAM.Config[0].Subnet.IsValid() {
		close(e.done)
		return nil, fmt.Errorf("egress: the subnet of network %s: %v", e.network, err)
	}
	// The proxy serves the internal network only: on the upstream one,
	// other containers could use it (and write in this task's record).
	args := []string{"egress-proxy", "--listen", ":" + strconv.Itoa(ProxyPort),
		"--listen-in", inspected.Network.IPAM.Config[0].Subnet.String()}
	for _, r := range allow.Rules() {
		args = append(args, "--allow", r.String())
	}
	mem, pids := int64(256<<20), int64(128)
	created, err := cli.ContainerCreate(ctx, client.ContainerCreateOptions{
		Name: opt.Name + "-proxy-" + suffix,
		Config: &container.Config{
			Image: image, Entrypoint: []string{binaryPath}, Cmd: args, User: "65534:65534",
			Labels: withLabel(opt.Labels, LabelRole, roleProxy), AttachStdout: true, AttachStderr: true,
			Env: []string{"GODEBUG=netdns=go"},
		},
		HostConfig: &container.HostConfig{
			NetworkMode:    container.NetworkMode(e.network),
			CapDrop:        []string{"ALL"},
			SecurityOpt:    []string{"no-new-privileges:true"},
			ReadonlyRootfs: true,
			RestartPolicy:  container.RestartPolicy{Name: container.RestartPolicyDisabled},
			LogConfig:      container.LogConfig{Type: "json-file", Config: map[string]string{"max-size": "1m", "max-file": "1"}},
			Resources: container.Resources{
				Memory: mem, MemorySwap: mem, NanoCPUs: 1e9, PidsLimit: &pids,
				Ulimits: []*container.Ulimit{{Name: "nofile", Soft: 4096, Hard: 4096}},
			},
		},
	})
	e.proxyID = created.ID
	if err != nil {
		close(e.done)
		return nil, fmt.Errorf("egress: create proxy: %w", err)
	}
	if _, err := cli.NetworkConnect(ctx, upstream, client.NetworkConnectOptions{Container: e.proxyID}); err != nil {
		close(e.done)
		return nil, fmt.Errorf("egress: attach the proxy to network %s: %w", upstream, err)
	}
	// Attach before the start, so that no line of output is missed.
	att, err := cli.ContainerAttach(ctx, e.proxyID, client.ContainerAttachOptions{Stream: true, Stdout: true, Stderr: true})
	if err != nil {
		close(e.done)
		return nil, fmt.Errorf("egress: attach to the proxy: %w", err)
	}
	ready := make(chan struct{})
	go e.follow(att.HijackedResponse, ready, opt.Report)
	if _, err := cli.ContainerStart(ctx, e.proxyID, client.ContainerStartOptions{}); err != nil {
		att.Close()
		return nil, fmt.Errorf("egress: start proxy: %w", err)
	}
	wait := time.NewTimer(readyTimeout)
	defer wait.Stop()
	select {
	case <-ready:
	case <-e.done:
		return nil, fmt.Errorf("egress: the proxy did not start: %w", e.Err())
	case <-wait.C:
		return nil, fmt.Errorf("egress: the proxy did not listen within %s", readyTimeout)
	case <-ctx.Done():
		return nil, ctx.Err()
	}
	res, err := cli.ContainerInspect(ctx, e.proxyID, client.ContainerInspectOptions{})
	if err != nil {
		return nil, fmt.Errorf("egress: inspect proxy: %w", err)
	}
	ep := res.Container.NetworkSettings.Networks[e.network]
	if ep == nil || !ep.IPAddress.IsValid() {
		return nil, fmt.Errorf("egress: the proxy has no address on %s", e.network)
	}
	e.proxyURL = "http://" + ep.IPAddress.String() + ":" + strconv.Itoa(ProxyPort)
	return e, nil
}

// follow reads the proxy's output until it ends: events on stdout (the
// first one, Ready, closes ready), the last lines of stderr kept for the
// error. It closes done when the output ends, which is when the proxy
// container stops or is removed.
func (e *Egress) follow(att client.HijackedResponse, ready chan struct{}, report func(egress.Event)) {
	defer att.Close()
	pr, pw := io.Pipe()
	go func() {
		_, err := stdcopy.StdCopy(pw, &e.stderr, att.Reader)
		pw.CloseWithError(err)
	}()
	sc := bufio.NewScanner(pr)
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	isReady := false
	var why error
	for sc.Scan() {
		var ev egress.Event
		if err := json.Unmarshal(sc.Bytes(), &ev); err != nil {
			why = fmt.Errorf("unreadable output %q", truncate(sc.Text(), 200))
			break
		}
		if !isReady {
			if ev.Method == egress.Ready {
				isReady = true
				close(ready)
			}
			continue
		}
		if report != nil {
			report(ev)
		}
	}
	pr.CloseWithError(io.ErrClosedPipe)
	if why == nil {
		why = sc.Err()
	}
	e.mu.Lock()
	e.stopErr = e.stopReason(why)
	e.mu.Unlock()
	close(e.done)
}

// stopReason describes why the proxy stopped, with its exit status and
// the end of its error output.
func (e *Egress) stopReason(why error) error {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	msg := ""
	if why != nil {
		msg = ": " + why.Error()
	}
	if res, err := e.cli.ContainerInspect(ctx, e.proxyID, client.ContainerInspectOptions{}); err == nil && res.Container.State != nil {
		st := res.Container.State
		switch {
		case st.OOMKilled:
			msg += ": killed for using more memory than its limit"
		case !st.Running:
			msg += fmt.Sprintf(": exit code %d", st.ExitCode)
		}
	} else if cerrdefs.IsNotFound(err) {
		msg += ": its container was removed"
	}
	if tail := e.stderr.String(); tail != "" {
		msg += ": " + tail
	}
	return fmt.Errorf("%w%s", ErrProxyStopped, msg)
}

// Close removes the proxy container and the internal network. It is
// idempotent and works with a cancelled ctx. The sandbox must have left
// the network (been removed) first, or the network stays; a later cleanup
// removes it.
func (e *Egress) Close(ctx context.Context) error {
	e.closeOnce.Do(func() {
		e.mu.Lock()
		e.closing = true
		e.mu.Unlock()
		ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 45*time.Second)
		defer cancel()
		var errs []error
		if e.proxyID != "" {
			_, err := e.cli.ContainerRemove(ctx, e.proxyID, client.ContainerRemoveOptions{Force: true})
			if err != nil && !cerrdefs.IsNotFound(err) {
				errs = append(errs, fmt.Errorf("remove egress proxy: %w", err))
			}
		}
		if err := removeNetwork(ctx, e.cli, e.network); err != nil {
			errs = append(errs, err)
		}
		e.closeErr = errors.Join(errs...)
	})
	return e.closeErr
}

func removeNetwork(ctx context.Context, cli *client.Client, name string) error {
	_, err := cli.NetworkRemove(ctx, name, client.NetworkRemoveOptions{})
	if err != nil && !cerrdefs.IsNotFound(err) {
		return fmt.Errorf("remove egress network %s: %w", name, err)
	}
	return nil
}

func withLabel(m map[string]string, k, v string) map[string]string {
	out := map[string]string{k: v}
	for lk, lv := range m {
		out[lk] = lv
	}
	out[k] = v
	return out
}

func randomID() string {
	b := make([]byte, 6)
	rand.Read(b)
	return hex.EncodeToString(b)
}

func truncate(s string, n int) string {
	if len(s) > n {
		return s[:n] + "..."
	}
	return s
}

// tailBuffer keeps the last 2 KiB written to it.
type tailBuffer struct {
	mu  sync.Mutex
	buf []byte
}

func (t *tailBuffer) Write(p []byte) (int, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.buf = append(t.buf, p...)
	if len(t.buf) > 2048 {
		t.buf = t.buf[len(t.buf)-2048:]
	}
	return len(p), nil
}

func (t *tailBuffer) String() string {
	t.mu.Lock()
	defer t.mu.Unlock()
	return strings.TrimSpace(string(bytes.ToValidUTF8(t.buf, []byte("?"))))
}
