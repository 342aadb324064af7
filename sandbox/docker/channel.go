package docker

import (
	"archive/tar"
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"strings"
	"sync"
	"time"

	cerrdefs "github.com/containerd/errdefs"
	"github.com/moby/moby/api/pkg/stdcopy"
	"github.com/moby/moby/api/types/container"
	"github.com/moby/moby/api/types/mount"
	"github.com/moby/moby/client"

	"github.com/runner-dev/runner/sandbox"
	"github.com/runner-dev/runner/sandbox/channel"
	"github.com/runner-dev/runner/sandbox/fileops"
)

// The channel: with a helper binary (UseChannel), every sandbox gets it
// at start, in a memory-backed volume of its own owned by root (mode 0755,
// the file 0555), which the sandbox user can neither write nor replace,
// and runs it once, as the sandbox user, in one attached exec. Commands
// and file operations then travel on that exec's stdin and stdout
// (package channel) instead of costing an exec each. If the helper cannot
// start, or dies (killed by the agent, out of memory), the sandbox goes on
// with an exec per command, and says so in the next ExecResult's Notice.
const (
	channelDir  = "/.runner"
	channelPath = channelDir + "/" + channel.Subcommand
)

// UseChannel makes the sandboxes started from now on serve their commands
// and file operations through the helper bin: a static executable that
// runs channel.Main when its first argument is channel.Subcommand (runner
// itself, built with CGO_ENABLED=0, or cmd/sandbox-channel). It fails,
// changing nothing, when bin is not such a file.
func (e *Engine) UseChannel(bin string) error {
	if err := channel.CheckBinary(bin); err != nil {
		return err
	}
	e.channelHelper = bin
	return nil
}

// withChannel adds the helper's volume to hc when the engine has a helper.
func (e *Engine) withChannel(hc *container.HostConfig) *container.HostConfig {
	if e.channelHelper == "" {
		return hc
	}
	hc.Mounts = append(hc.Mounts, mount.Mount{
		Type:   mount.TypeVolume,
		Target: channelDir,
		VolumeOptions: &mount.VolumeOptions{DriverConfig: &mount.Driver{Name: "local", Options: map[string]string{
			"type": "tmpfs", "device": "tmpfs", "o": "size=128m,mode=0755,nosuid,nodev",
		}}},
	})
	return hc
}

// errNoReply: the helper did not answer within a command's timeout and
// hostGrace.
var errNoReply = errors.New("no reply in time")

// runtimeGVisor is gVisor's runtime name, which runs without the channel.
const runtimeGVisor = "runsc"

// isGVisor reports whether the runtime named name is gVisor's: runsc, or
// one of the variants its documentation declares (runsc-kvm, runsc-debug).
func isGVisor(name string) bool {
	return name == runtimeGVisor || strings.HasPrefix(name, runtimeGVisor+"-")
}

// runtime is the OCI runtime the container runs under: the one its Config
// names, else the one the engine recorded at its creation (the engine's
// default runtime, which may be gVisor's).
func (d *Sandbox) runtime(ctx context.Context) (string, error) {
	if d.cfg.Runtime != "" {
		return d.cfg.Runtime, nil
	}
	res, err := d.e.cli.ContainerInspect(ctx, d.id, client.ContainerInspectOptions{})
	if err != nil {
		return "", d.e.explain("inspect sandbox", "", err)
	}
	if res.Container.HostConfig == nil {
		return "", nil
	}
	return res.Container.HostConfig.Runtime, nil
}

// channelState is a sandbox's channel, once started.
type channelState struct {
	mu       sync.Mutex
	client   *channel.Client        // nil when down or never up
	notice   string                 // for the next ExecResult
	fellBack bool                   // the channel ended, or never started
	stderr   *fileops.LimitedBuffer // what the helper said on stderr
}

// startChannel copies the helper in and starts it. A failure leaves the
// sandbox on an exec per command, noted for the next result.
func (d *Sandbox) startChannel(ctx context.Context) {
	if d.e.channelHelper == "" {
		return
	}
	rt, rtErr := d.runtime(ctx)
	if isGVisor(rt) {
		// Under gVisor the whole suite has passed through the channel
		// since the wrapper ignores the hangup gVisor sends, but not yet
		// reliably (the file-tool race part once found the race not run):
		// until it does, gVisor's sandboxes run an exec per command,
		// whether their Config names gVisor or the engine runs it by
		// default.
		return
	}
	d.ch = &channelState{stderr: &fileops.LimitedBuffer{Max: 4 << 10}}
	if rtErr != nil {
		d.channelDown(fmt.Errorf("start the command channel: %w", rtErr))
		return
	}
	c, err := d.dialChannel(ctx)
	if err != nil {
		d.channelDown(fmt.Errorf("start the command channel: %w", err))
		return
	}
	d.ch.mu.Lock()
	d.ch.client = c
	d.ch.mu.Unlock()
}

func (d *Sandbox) dialChannel(ctx context.Context) (*channel.Client, error) {
	f, err := os.Open(d.e.channelHelper)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil {
		return nil, err
	}
	pr, pw := io.Pipe()
	go func() {
		tw := tar.NewWriter(pw)
		err := tw.WriteHeader(&tar.Header{Name: channel.Subcommand, Mode: 0o555, Size: st.Size(), ModTime: time.Unix(0, 0)})
		if err == nil {
			_, err = io.Copy(tw, f)
		}
		if err == nil {
			err = tw.Close()
		}
		pw.CloseWithError(err)
	}()
	if _, err := d.e.cli.CopyToContainer(ctx, d.id, client.CopyToContainerOptions{DestinationPath: channelDir, Content: pr}); err != nil {
		pr.CloseWithError(err)
		return nil, d.e.explain("copy the channel helper in", "", err)
	}
	created, err := d.e.cli.ExecCreate(ctx, d.id, client.ExecCreateOptions{
		User: user, AttachStdin: true, AttachStdout: true, AttachStderr: true,
		WorkingDir: sandbox.Workdir,
		Cmd:        []string{channelPath, channel.Subcommand},
	})
	if err != nil {
		return nil, d.e.explain("start the channel helper", "", err)
	}
	att, err := d.e.cli.ExecAttach(ctx, created.ID, client.ExecAttachOptions{})
	if err != nil {
		return nil, d.e.explain("start the channel helper", "", err)
	}
	out, outW := io.Pipe()
	stderr := d.ch.stderr
	go func() {
		_, err := stdcopy.StdCopy(outW, stderr, att.Reader)
		outW.CloseWithError(err)
	}()
	c, err := channel.Dial(ctx, out, hijackedCloser{att})
	if err != nil {
		att.Close()
		return nil, fmt.Errorf("%w (helper said: %q)", err, stderr.Buf.String())
	}
	go func() {
		<-c.Down()
		att.Close()
		if err := c.Err(); err != nil && !d.isClosed() {
			d.channelDown(err)
		}
	}()
	return c, nil
}

// hijackedCloser closes the whole exec connection.
type hijackedCloser struct{ att client.ExecAttachResult }

func (h hijackedCloser) Write(p []byte) (int, error) { return h.att.Conn.Write(p) }
func (h hijackedCloser) Close() error                { h.att.Close(); return nil }

func (d *Sandbox) isClosed() bool {
	d.mu.Lock()
	defer d.mu.Unlock()
	return d.closed || d.stopped
}

// channel returns the sandbox's live channel, or nil.
func (d *Sandbox) channel() *channel.Client {
	if d.ch == nil {
		return nil
	}
	d.ch.mu.Lock()
	defer d.ch.mu.Unlock()
	return d.ch.client
}

// channelDown leaves the channel for an exec per command, once, and notes
// why for the agent (the next ExecResult's Notice) and the log.
func (d *Sandbox) channelDown(cause error) {
	d.ch.mu.Lock()
	defer d.ch.mu.Unlock()
	if d.ch.fellBack {
		return
	}
	d.ch.fellBack = true
	if d.ch.client != nil {
		d.ch.client.Close()
		d.ch.client = nil
	}
	d.ch.notice = fmt.Sprintf("The sandbox's command channel ended (%v); commands now run one engine exec each, which is slower.", cause)
	slog.Warn("sandbox command channel down; falling back to an exec per command", "sandbox", d.name, "cause", cause.Error())
}

// takeNotice returns the pending notice, once.
func (d *Sandbox) takeNotice() string {
	if d.ch == nil {
		return ""
	}
	d.ch.mu.Lock()
	defer d.ch.mu.Unlock()
	n := d.ch.notice
	d.ch.notice = ""
	return n
}

// closeChannel ends the channel with the sandbox.
func (d *Sandbox) closeChannel() {
	if c := d.channel(); c != nil {
		c.Close()
	}
}

// execChannel runs cmd through the channel when there is one. ok is false
// when the caller should run it with an exec of its own: no channel, or
// one that was down before the command was sent. A command in flight when
// the channel ends was killed with it (the helper's end of the wrapper's
// stdin closed, which ends the command as at a timeout): its result says
// so, with exit code 137, rather than running it a second time.
func (d *Sandbox) execChannel(ctx context.Context, cmd, dir string, opt sandbox.ExecOptions) (res sandbox.ExecResult, err error, ok bool) {
	c := d.channel()
	if c == nil {
		return res, nil, false
	}
	res, err, stopped := d.watchChannelExec(ctx, c, cmd, dir, opt)
	if stopped != nil {
		return sandbox.ExecResult{}, fmt.Errorf("exec: %w", stopped), true
	}
	switch {
	case err == nil:
		res.Notice = d.takeNotice()
		return res, nil, true
	case errors.Is(err, channel.ErrNotSent):
		d.channelDown(err)
		return res, nil, false
	case errors.Is(err, channel.ErrDown):
		d.channelDown(err)
		if serr := d.stoppedError(ctx); serr != nil {
			return res, fmt.Errorf("exec: %w", serr), true
		}
		// Killed with the channel; past its timeout, as an exec's would be.
		return sandbox.ExecResult{ExitCode: 137, TimedOut: errors.Is(err, errNoReply), Notice: d.takeNotice()}, nil, true
	case ctx.Err() != nil:
		return res, fmt.Errorf("exec: %w", err), true
	}
	return res, fmt.Errorf("exec: %w", err), true
}

// watchChannelExec runs cmd through c while it watches the container: a
// sandbox that ends under a command (gVisor ends the whole sandbox at its
// process or memory limit) may leave the channel's stream open, so the
// reply would never come. Once the container is seen stopped, the channel
// is let go and stopped says why; a helper that does not answer within the
// command's timeout and hostGrace is let go too (the command then counts as
// killed with it, as at any end of the channel).
func (d *Sandbox) watchChannelExec(ctx context.Context, c *channel.Client, cmd, dir string, opt sandbox.ExecOptions) (res sandbox.ExecResult, err, stopped error) {
	timeout := opt.Timeout
	if timeout <= 0 {
		timeout = sandbox.DefaultExecTimeout
	}
	// The helper itself waits its own grace past the timeout (for the
	// watchdog) before it kills from a second wrapper and answers: the
	// host waits for that, and its own grace on top.
	// The call itself runs under the caller's ctx, as without the watch.
	deadline := time.NewTimer(timeout + channel.KillGrace + hostGrace)
	defer deadline.Stop()
	type reply struct {
		res sandbox.ExecResult
		err error
	}
	got := make(chan reply, 1)
	go func() {
		r, err := c.Exec(ctx, cmd, dir, opt)
		got <- reply{r, err}
	}()
	poll := time.Second
	timer := time.NewTimer(poll)
	defer timer.Stop()
	for {
		select {
		case r := <-got:
			return r.res, r.err, nil
		case <-deadline.C:
			d.channelDown(fmt.Errorf("no reply %s past the command's timeout", channel.KillGrace+hostGrace)) // ends c, and so the call in flight
			r := <-got
			return r.res, fmt.Errorf("%w: %w", channel.ErrDown, errNoReply), nil
		case <-timer.C:
			if !d.seenStopped(ctx) {
				poll = min(poll*2, 5*time.Second)
				timer.Reset(poll)
				continue
			}
			serr := d.stoppedError(ctx)
			if serr == nil {
				serr = fmt.Errorf("sandbox %s: %w", d.name, sandbox.ErrStopped)
			}
			d.channelDown(serr) // ends c, and so the call in flight
			<-got
			return sandbox.ExecResult{}, nil, serr
		}
	}
}

// seenStopped reports whether one look at the container finds it stopped
// or gone; an answer the engine could not give counts as running.
func (d *Sandbox) seenStopped(ctx context.Context) bool {
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 10*time.Second)
	defer cancel()
	res, err := d.e.cli.ContainerInspect(ctx, d.id, client.ContainerInspectOptions{})
	if err != nil {
		return cerrdefs.IsNotFound(err)
	}
	return res.Container.State != nil && !res.Container.State.Running
}

// fileChannel runs a file operation through the channel when there is
// one, bounded by fileOpTimeout as one run of the file helper is; ok is
// false when the caller should run it with an exec of its own. File
// operations are safe to repeat, so one in flight when the channel ends is
// run again that way.
func fileChannel[T any](ctx context.Context, d *Sandbox, do func(ctx context.Context, c *channel.Client) (T, error)) (v T, err error, ok bool) {
	c := d.channel()
	if c == nil {
		return v, nil, false
	}
	if err := d.usable(); err != nil {
		return v, err, true
	}
	ctx, cancel := context.WithTimeout(ctx, fileOpTimeout)
	defer cancel()
	v, err = do(ctx, c)
	if errors.Is(err, channel.ErrDown) {
		d.channelDown(err)
		return v, nil, false
	}
	return v, err, true
}
