package docker

import (
	"context"
	"fmt"
	"math"
	"strconv"
	"strings"
	"sync"
	"time"

	cerrdefs "github.com/containerd/errdefs"
	"github.com/moby/moby/api/types/container"
	"github.com/moby/moby/api/types/mount"
	"github.com/moby/moby/client"

	"github.com/runner-dev/runner/internal/egress/dockernet"
	"github.com/runner-dev/runner/sandbox"
)

// Sandbox is a sandbox.Sandbox backed by one container of a Docker engine.
type Sandbox struct {
	e        *Engine
	id       string
	name     string
	cfg      sandbox.Config
	deadline time.Time
	egress   *dockernet.Egress // nil without an allowlist
	ch       *channelState     // nil without a channel helper
	helper   helperDelivery    // how the helper reached it, if at all

	mu        sync.Mutex
	stopped   bool
	closed    bool
	closeErr  error
	closeOnce sync.Once
}

var _ sandbox.Sandbox = (*Sandbox)(nil)

// Start is StartContainer for callers that know only sandbox.Backend.
func (e *Engine) Start(ctx context.Context, cfg sandbox.Config) (sandbox.Sandbox, error) {
	d, err := e.StartContainer(ctx, cfg)
	if err != nil {
		return nil, err
	}
	return d, nil
}

// StartContainer creates a hardened container from cfg, copies
// cfg.Workspace into Workdir and starts it. If anything fails after the
// container was created, the container is removed before it returns.
func (e *Engine) StartContainer(ctx context.Context, cfg sandbox.Config) (*Sandbox, error) {
	cfg, err := cfg.WithDefaults()
	if err != nil {
		return nil, err
	}
	deadline := time.Now().Add(cfg.Lifetime)
	name := "runner-" + cfg.RunID + "-" + sandbox.RandomID()
	if cfg.TaskID != "" {
		name = "runner-" + safeName(cfg.TaskID) + "-" + sandbox.RandomID()
	}
	var eg *dockernet.Egress
	if len(cfg.Egress) > 0 {
		if cfg, eg, err = e.startEgress(ctx, cfg, name, deadline); err != nil {
			return nil, err
		}
	}
	hc := hostConfig(cfg)
	if cfg.Disk > 0 {
		e.limitImageVolumes(ctx, cfg, hc)
	}
	created, helper, err := e.createWithChannel(ctx, client.ContainerCreateOptions{
		Name:       name,
		Config:     containerConfig(cfg, e.owner, deadline),
		HostConfig: hc,
	})
	// Register the cleanup before looking at the error: a create that
	// failed late may still have left a container behind.
	d := &Sandbox{e: e, id: created.ID, name: name, cfg: cfg, deadline: deadline, egress: eg, helper: helper}
	if err != nil {
		d.Close(ctx)
		return nil, e.explain("create sandbox", cfg.Image, err)
	}
	ok := false
	defer func() {
		if !ok {
			d.Close(ctx)
		}
	}()
	// The memory-backed workspace exists only while the container runs,
	// so it is filled after the start; the writable layer before it.
	if cfg.Disk < 0 {
		if err := d.copyIn(ctx, cfg.Workspace); err != nil {
			return nil, err
		}
	}
	if _, err := e.cli.ContainerStart(ctx, d.id, client.ContainerStartOptions{}); err != nil {
		return nil, e.explain("start sandbox", cfg.Image, err)
	}
	if cfg.Disk > 0 {
		if err := d.copyIn(ctx, cfg.Workspace); err != nil {
			return nil, err
		}
	}
	if len(cfg.CACerts) > 0 {
		if err := d.installCACerts(ctx, cfg.CACerts); err != nil {
			return nil, err
		}
	}
	if err := d.restoreEnvironment(ctx); err != nil {
		return nil, err
	}
	d.startChannel(ctx)
	ok = true
	return d, nil
}

// ID is the container id.
func (d *Sandbox) ID() string { return d.id }

// Name is the container name.
func (d *Sandbox) Name() string { return d.name }

// Deadline is when the sandbox expires by itself.
func (d *Sandbox) Deadline() time.Time { return d.deadline }

// user is the sandbox user as the engine takes it.
var user = fmt.Sprintf("%d:%d", sandbox.UID, sandbox.GID)

func containerConfig(cfg sandbox.Config, owner sandbox.Owner, deadline time.Time) *container.Config {
	secs := int64(math.Ceil(cfg.Lifetime.Seconds()))
	return &container.Config{
		Image: cfg.Image,
		// PID 1 (the engine's init, see HostConfig.Init) waits on a sleep
		// that ends at the deadline: the sandbox stops by itself even if
		// the runner is killed.
		Entrypoint: []string{"sleep"},
		Cmd:        []string{strconv.FormatInt(secs, 10)},
		User:       user,
		Env:        cfg.CommandEnv(),
		WorkingDir: sandbox.Workdir,
		Labels:     labels(cfg, owner, deadline),
		StopSignal: "SIGKILL",
	}
}

func hostConfig(cfg sandbox.Config) *container.HostConfig {
	init := true
	pids := cfg.Pids
	hc := &container.HostConfig{
		NetworkMode: container.NetworkMode(cfg.Network),
		Runtime:     cfg.Runtime,
		CapDrop:     []string{"ALL"},
		SecurityOpt: []string{"no-new-privileges:true"},
		Init:        &init,
		LogConfig: container.LogConfig{
			Type:   "json-file",
			Config: map[string]string{"max-size": "1m", "max-file": "1"},
		},
		RestartPolicy: container.RestartPolicy{Name: container.RestartPolicyDisabled},
		Resources: container.Resources{
			Memory:     cfg.Memory,
			MemorySwap: cfg.Memory,
			NanoCPUs:   int64(cfg.CPUs * 1e9),
			PidsLimit:  &pids,
			Ulimits: []*container.Ulimit{
				{Name: "nofile", Soft: cfg.NoFile, Hard: cfg.NoFile},
			},
		},
	}
	if cfg.Disk > 0 {
		limitDisk(hc, cfg)
	}
	return hc
}

// limitDisk makes every place the sandbox user can write a memory-backed
// file system of cfg.Disk bytes, and the rest read-only. The workspace is a
// volume, not a plain tmpfs mount, because the Engine's archive API (the
// copy in and out) reaches into volumes but not into tmpfs mounts.
func limitDisk(hc *container.HostConfig, cfg sandbox.Config) {
	uid, gid := sandbox.UID, sandbox.GID
	hc.ReadonlyRootfs = true
	scratch := fmt.Sprintf("rw,nosuid,nodev,size=%d,mode=1777", cfg.Disk)
	hc.Tmpfs = map[string]string{
		"/tmp":          scratch,
		"/var/tmp":      scratch,
		sandbox.HomeDir: fmt.Sprintf("rw,nosuid,nodev,size=%d,uid=%d,gid=%d,mode=0700", cfg.Disk, uid, gid),
	}
	hc.Mounts = []mount.Mount{{
		Type:   mount.TypeVolume,
		Target: sandbox.Workdir,
		VolumeOptions: &mount.VolumeOptions{DriverConfig: &mount.Driver{Name: "local", Options: map[string]string{
			"type": "tmpfs", "device": "tmpfs",
			"o": fmt.Sprintf("size=%d,uid=%d,gid=%d,mode=0755", cfg.Disk, uid, gid),
		}}},
	}}
}

// usable returns an error when the sandbox can no longer run commands.
func (d *Sandbox) usable() error {
	d.mu.Lock()
	defer d.mu.Unlock()
	switch {
	case d.closed:
		return sandbox.ErrClosed
	case d.stopped:
		return sandbox.ErrStopped
	}
	return d.egressError()
}

// closeTimeout bounds Close, retries included.
const closeTimeout = 45 * time.Second

// sleepCtx waits d or until ctx ends.
func sleepCtx(ctx context.Context, d time.Duration) error {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-t.C:
		return nil
	}
}

// Close removes the container. It is idempotent, and it works with an
// already cancelled ctx, so it can run from a defer after Ctrl-C.
func (d *Sandbox) Close(ctx context.Context) error {
	d.closeOnce.Do(func() {
		d.mu.Lock()
		d.closed = true
		d.mu.Unlock()
		d.link().Close()
		ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), closeTimeout)
		defer cancel()
		// A daemon that is restarting refuses connections for a while:
		// keep trying, so that the container does not outlive its run.
		wait := 250 * time.Millisecond
		defer d.closeEgress(ctx)
		if d.id == "" {
			return
		}
		for {
			_, err := d.e.cli.ContainerRemove(ctx, d.id, client.ContainerRemoveOptions{Force: true, RemoveVolumes: true})
			if err == nil || cerrdefs.IsNotFound(err) {
				return
			}
			// gVisor's sandbox process can be a zombie for a moment after
			// a kill (seen right after a snapshot's pause): the engine
			// then refuses to remove the container until it is reaped.
			retry := client.IsErrConnectionFailed(err) || strings.Contains(err.Error(), "is zombie")
			if !retry || sleepCtx(ctx, wait) != nil {
				d.closeErr = d.e.explain("remove sandbox "+d.name, "", err)
				return
			}
			wait = min(2*wait, 2*time.Second)
		}
	})
	return d.closeErr
}

// closeEgress removes the proxy and its network, after the container.
func (d *Sandbox) closeEgress(ctx context.Context) {
	if d.egress == nil {
		return
	}
	if err := d.egress.Close(ctx); err != nil && d.closeErr == nil {
		d.closeErr = err
	}
}

// stoppedError explains why the container no longer runs, for a caller
// whose command was cut short.
func (d *Sandbox) stoppedError(ctx context.Context) error {
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 10*time.Second)
	defer cancel()
	// A container being killed may still count as running for a moment
	// after its processes are gone: look a few times.
	var st *container.State
	for i := 0; i < 5; i++ {
		res, err := d.e.cli.ContainerInspect(ctx, d.id, client.ContainerInspectOptions{})
		if err != nil {
			if cerrdefs.IsNotFound(err) {
				return fmt.Errorf("sandbox %s was removed from outside: %w", d.name, sandbox.ErrStopped)
			}
			return d.e.explain("inspect sandbox", "", err)
		}
		if st = res.Container.State; st == nil || !st.Running {
			break
		}
		time.Sleep(100 * time.Millisecond)
	}
	if st == nil || st.Running {
		return nil
	}
	why := fmt.Sprintf("exit code %d", st.ExitCode)
	switch {
	case st.OOMKilled:
		why = "killed for using more memory than its limit"
	case !time.Now().Before(d.deadline):
		why = "its lifetime is over"
	case st.ExitCode == 137:
		why = "killed from outside (exit code 137)"
	}
	return fmt.Errorf("sandbox %s stopped: %s: %w", d.name, why, sandbox.ErrStopped)
}

// safeName keeps the characters a container name allows.
func safeName(s string) string {
	b := []byte(s)
	for i, c := range b {
		ok := c == '-' || c == '_' || c == '.' || c >= '0' && c <= '9' || c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z'
		if !ok {
			b[i] = '_'
		}
	}
	if len(b) > 40 {
		b = b[:40]
	}
	return string(b)
}
