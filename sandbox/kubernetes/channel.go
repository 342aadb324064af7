package kubernetes

import (
	"context"
	"fmt"
	"io"
	"os"
	"strconv"
	"strings"
	"time"

	"github.com/runner-dev/runner/sandbox/channel"
)

// The channel: with Options.Channel, every sandbox gets the helper
// (Options.Helper) at start, in its memory-backed helperDir volume, and
// runs it once, as the sandbox user, in one exec whose stdin and stdout
// stay open for the pod's life. Commands and file operations then travel
// on that one stream (package channel) instead of costing an exec of the
// API server each. If the helper cannot start, or its stream ends (the
// agent killed the helper, the connection broke), the sandbox goes on with
// an exec per command, and says so in the next ExecResult's Notice
// (channel.Link, as on Docker).
//
// There is no root in the pod: the helper's file and its directory belong
// to the sandbox user, so the agent can replace the file. That is harmless
// because the host starts the helper only here, in StartPod, before the
// sandbox is handed to anyone: no agent command has run yet. Nothing
// starts it again afterwards; a channel that ends is never restarted, the
// sandbox falls back to an exec per command, which runs only the image's
// sh, never the file in helperDir.

// channelStart writes the helper, whose size is $1, from stdin to
// helperPath, then runs it on the same stdin: the host sends nothing after
// the helper's bytes until the helper said hello, so head cannot read into
// the channel. A file left by the egress probe is replaced (it is
// read-only, so removed first).
const channelStart = `rm -f ` + helperPath + ` && head -c "$1" >` + helperPath + ` && chmod 0555 ` + helperPath + ` && exec ` + helperPath + ` ` + channel.Subcommand

// channelState is a sandbox's channel: the link both backends share, what
// the helper said on stderr (for the diagnosis), and the end of its stream.
type channelState struct {
	link   *channel.Link
	stderr tail
	cancel context.CancelFunc // ends the stream
	ended  chan struct{}      // closed once the stream ended
}

// channelWanted reports whether b's sandboxes serve their commands through
// the channel.
func (b *Backend) channelWanted() bool { return b.opt.Channel && b.opt.Helper != "" }

// startChannel copies the helper in and starts it, in one exec. A failure
// leaves the sandbox on an exec per command, noted for the next result.
func (s *Sandbox) startChannel(ctx context.Context) {
	if !s.b.channelWanted() {
		return
	}
	s.ch = &channelState{link: channel.NewLink(s.name, linkHost{s})}
	c, err := s.dialChannel(ctx)
	if err != nil {
		s.ch.link.Down(fmt.Errorf("start the command channel: %w", err))
		return
	}
	s.ch.link.Up(c)
}

// dialChannel starts the helper with one long exec and speaks to it.
func (s *Sandbox) dialChannel(ctx context.Context) (*channel.Client, error) {
	bin, err := os.Open(s.b.opt.Helper)
	if err != nil {
		return nil, err
	}
	st, err := bin.Stat()
	if err != nil {
		bin.Close()
		return nil, err
	}
	inR, inW := io.Pipe()
	outR, outW := io.Pipe()
	// The stream outlives StartPod's ctx: it ends with the channel, or
	// with Close.
	streamCtx, cancel := context.WithCancel(context.WithoutCancel(ctx))
	s.ch.cancel, s.ch.ended = cancel, make(chan struct{})
	argv := s.command(helperDir, nil, "sh", "-c", channelStart, "runner-channel", strconv.FormatInt(st.Size(), 10))
	go func() {
		defer close(s.ch.ended)
		defer bin.Close()
		code, err := s.stream(streamCtx, argv, io.MultiReader(bin, inR), outW, &s.ch.stderr)
		if err == nil {
			err = fmt.Errorf("the helper's exec ended (exit code %d)", code)
		}
		if msg := strings.TrimSpace(s.ch.stderr.String()); msg != "" {
			err = fmt.Errorf("%w; it said: %s", err, msg)
		}
		outW.CloseWithError(err)
		inR.CloseWithError(err)
		cancel()
	}()
	c, err := channel.Dial(ctx, outR, inW)
	if err != nil {
		cancel()
		<-s.ch.ended
		if msg := strings.TrimSpace(s.ch.stderr.String()); msg != "" && !strings.Contains(err.Error(), msg) {
			err = fmt.Errorf("%w (the helper said: %q)", err, msg)
		}
		return nil, err
	}
	go func() {
		// Once the channel ends, for whatever reason, so does its stream:
		// the helper saw its input end and exits, and what it still
		// writes is read and dropped, so that the stream ends as a
		// command's does; one that does not end within streamLinger is
		// cut.
		<-c.Down()
		go io.Copy(io.Discard, outR)
		s.endStream()
	}()
	return c, nil
}

// link is the sandbox's channel link; nil (no channel: every call falls
// back) without one.
func (s *Sandbox) link() *channel.Link {
	if s.ch == nil {
		return nil
	}
	return s.ch.link
}

// closeChannel ends the channel and its stream, with the sandbox.
func (s *Sandbox) closeChannel() {
	if s.ch == nil {
		return
	}
	s.ch.link.Close()
	s.endStream()
}

// streamLinger is how long the channel's stream may take to end by
// itself once its input is closed, before it is cut (which client-go
// reports as copy errors in its log).
const streamLinger = 3 * time.Second

// endStream waits, bounded, for the channel's stream to end, then cuts it.
func (s *Sandbox) endStream() {
	if s.ch.cancel == nil {
		return
	}
	t := time.NewTimer(streamLinger)
	select {
	case <-s.ch.ended:
	case <-t.C:
	}
	t.Stop()
	s.ch.cancel()
}

// linkHost is the sandbox as its channel's link needs it.
type linkHost struct{ s *Sandbox }

func (h linkHost) Kill(ctx context.Context, mark string)  { h.s.kill(ctx, mark) }
func (h linkHost) SeenStopped(ctx context.Context) bool   { return h.s.seenStopped(ctx) }
func (h linkHost) StoppedError(ctx context.Context) error { return h.s.stoppedError(ctx) }
