package docker

import (
	"archive/tar"
	"context"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync/atomic"
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
// at start, read-only to the sandbox user (see helperDelivery), and runs
// it once, as the sandbox user, in one attached exec. Commands and file
// operations then travel on that exec's stdin and stdout (package
// channel) instead of costing an exec each. If the helper cannot start,
// or dies (killed by the agent, out of memory), the sandbox goes on with
// an exec per command, and says so in the next ExecResult's Notice.
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
	abs, err := filepath.Abs(bin)
	if err != nil {
		return err
	}
	e.channelHelper = abs
	e.channelBind = new(atomic.Bool)
	e.channelBind.Store(isLocalDaemon(e.cli.DaemonHost()))
	return nil
}

// isLocalDaemon reports whether the engine at host (DOCKER_HOST's form)
// answers on a socket of this machine, and so may see its files.
func isLocalDaemon(host string) bool {
	return strings.HasPrefix(host, "unix://") || strings.HasPrefix(host, "npipe://")
}

// helperDelivery is how the helper reaches a sandbox's /.runner, which
// the sandbox user can neither write nor replace:
//
//   - bound: with an engine on this machine, the helper's file itself,
//     mounted read-only (with the host's owner and mode, which the
//     sandbox user cannot change on a read-only mount): no copy, no
//     volume, no cost per sandbox beyond the mount; the host's path of
//     the file shows in the sandbox's /proc/self/mountinfo;
//   - copied: through the archive API (an engine elsewhere, or one that
//     refused the mount because it does not see the file, as an engine
//     reached through a socket from another machine or container): into
//     a memory-backed volume of the sandbox's own, owned by root (0755,
//     the file 0555).
//
// A refused mount (see createWithChannel), or a mounted helper that does
// not start (see startChannel), turns the engine to copies for good.
type helperDelivery uint8

const (
	noHelper helperDelivery = iota
	helperBound
	helperCopied
)

// delivery is how the next sandbox gets the helper.
func (e *Engine) delivery() helperDelivery {
	switch {
	case e.channelHelper == "":
		return noHelper
	case e.channelBind.Load():
		return helperBound
	}
	return helperCopied
}

// withChannel adds the helper's mount to a copy of hc.
func (e *Engine) withChannel(hc *container.HostConfig, how helperDelivery) *container.HostConfig {
	c := *hc
	c.Mounts = slices.Clone(hc.Mounts)
	switch how {
	case helperBound:
		c.Mounts = append(c.Mounts, mount.Mount{Type: mount.TypeBind, Source: e.channelHelper, Target: channelPath, ReadOnly: true})
	case helperCopied:
		c.Mounts = append(c.Mounts, mount.Mount{
			Type:   mount.TypeVolume,
			Target: channelDir,
			VolumeOptions: &mount.VolumeOptions{DriverConfig: &mount.Driver{Name: "local", Options: map[string]string{
				"type": "tmpfs", "device": "tmpfs", "o": "size=128m,mode=0755,nosuid,nodev",
			}}},
		})
	}
	return &c
}

// createWithChannel creates the container with the helper delivered as
// the engine does now. An engine that refuses to mount the helper because
// it does not have the file is turned to copies, and the create is tried
// again so.
func (e *Engine) createWithChannel(ctx context.Context, opts client.ContainerCreateOptions) (client.ContainerCreateResult, helperDelivery, error) {
	hc := opts.HostConfig
	how := e.delivery()
	opts.HostConfig = e.withChannel(hc, how)
	created, err := e.cli.ContainerCreate(ctx, opts)
	if err != nil && how == helperBound && created.ID == "" && strings.Contains(err.Error(), e.channelHelper) {
		e.channelBind.Store(false)
		how = helperCopied
		opts.HostConfig = e.withChannel(hc, how)
		created, err = e.cli.ContainerCreate(ctx, opts)
	}
	return created, how, err
}

// channelState is a sandbox's channel: the link both backends share, and
// what the helper said on stderr, for the diagnosis.
type channelState struct {
	link   *channel.Link
	stderr *fileops.LimitedBuffer
}

// startChannel copies the helper in, unless it is mounted, and starts it.
// A failure leaves the sandbox on an exec per command, noted for the next
// result.
func (d *Sandbox) startChannel(ctx context.Context) {
	if d.helper == noHelper {
		return
	}
	d.ch = &channelState{link: channel.NewLink(d.name, linkHost{d}), stderr: &fileops.LimitedBuffer{Max: 4 << 10}}
	c, err := d.dialChannel(ctx)
	if err != nil {
		if d.helper == helperBound && ctx.Err() == nil {
			// The engine mounted a file it sees but the sandbox user
			// cannot run as the helper (another user's, not executable,
			// another build): the next sandboxes get a copy of runner's.
			d.e.channelBind.Store(false)
			err = fmt.Errorf("%w (the helper mounted from %s did not start; the next sandboxes get a copy of it)", err, d.e.channelHelper)
		}
		d.ch.link.Down(fmt.Errorf("start the command channel: %w", err))
		return
	}
	d.ch.link.Up(c)
}

// linkHost is the sandbox as its channel's link needs it.
type linkHost struct{ d *Sandbox }

func (h linkHost) Kill(ctx context.Context, mark string)  { h.d.kill(ctx, mark) }
func (h linkHost) SeenStopped(ctx context.Context) bool   { return h.d.seenStopped(ctx) }
func (h linkHost) StoppedError(ctx context.Context) error { return h.d.stoppedError(ctx) }

func (d *Sandbox) dialChannel(ctx context.Context) (*channel.Client, error) {
	if d.helper == helperCopied {
		if err := d.copyHelper(ctx); err != nil {
			return nil, err
		}
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
	}()
	return c, nil
}

// copyHelper copies the helper into the sandbox's /.runner volume.
func (d *Sandbox) copyHelper(ctx context.Context) error {
	f, err := os.Open(d.e.channelHelper)
	if err != nil {
		return err
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil {
		return err
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
		return d.e.explain("copy the channel helper in", "", err)
	}
	return nil
}

// hijackedCloser closes the whole exec connection.
type hijackedCloser struct{ att client.ExecAttachResult }

func (h hijackedCloser) Write(p []byte) (int, error) { return h.att.Conn.Write(p) }
func (h hijackedCloser) Close() error                { h.att.Close(); return nil }

// link is the sandbox's channel link; nil (no channel: every call
// falls back) without a helper.
func (d *Sandbox) link() *channel.Link {
	if d.ch == nil {
		return nil
	}
	return d.ch.link
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
