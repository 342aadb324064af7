package channel

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"time"

	"github.com/runner-dev/runner/sandbox"
	"github.com/runner-dev/runner/sandbox/cmdwrap"
)

// Host is what a Link needs of the backend whose sandbox it serves: its
// own way to run a command (one exec of the engine or of the API server),
// used when the channel cannot be.
type Host interface {
	// Kill kills every process of the command marked mark (the wrapper's
	// kill, run by an exec of the backend's own) and returns once none is
	// left; it is bounded and best effort.
	Kill(ctx context.Context, mark string)
	// SeenStopped is one cheap look: true when the sandbox is stopped or
	// gone.
	SeenStopped(ctx context.Context) bool
	// StoppedError says why the sandbox stopped; nil while it runs.
	StoppedError(ctx context.Context) error
}

// ReplyGrace is how long past a command's timeout and the helper's own
// KillGrace the host waits for the reply before it lets the channel go.
const ReplyGrace = 20 * time.Second

// Link is a sandbox's channel as its backend holds it: the live Client
// while the channel is up; once it ended (or never started), the fallback
// to one exec per command, said once to the agent (the next ExecResult's
// Notice) and to the log. Both backends use it, so the channel behaves
// the same on each. The zero Link has no channel: every call reports that
// the caller should run the operation itself.
type Link struct {
	name string // the sandbox's, for the log
	host Host

	mu       sync.Mutex
	client   *Client // nil when down or never up
	notice   string  // for the next ExecResult
	fellBack bool    // the channel ended, or never started
	closed   bool    // the sandbox is closing: an end is no fallback
}

// NewLink is the link of the sandbox name, served by host when the
// channel cannot serve.
func NewLink(name string, host Host) *Link {
	return &Link{name: name, host: host}
}

// Up makes c the live channel, and watches it: when it ends while the
// sandbox is open, the link falls back.
func (l *Link) Up(c *Client) {
	l.mu.Lock()
	l.client = c
	l.mu.Unlock()
	go func() {
		<-c.Down()
		l.mu.Lock()
		closed := l.closed
		l.mu.Unlock()
		if err := c.Err(); err != nil && !closed {
			l.Down(err)
		}
	}()
}

// Down leaves the channel for an exec per command, once, and notes why.
func (l *Link) Down(cause error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.fellBack {
		return
	}
	l.fellBack = true
	if l.client != nil {
		l.client.Close()
		l.client = nil
	}
	l.notice = fmt.Sprintf("The sandbox's command channel ended (%v); commands now run one exec each, which is slower.", cause)
	slog.Warn("sandbox command channel down; falling back to an exec per command", "sandbox", l.name, "cause", cause.Error())
}

// Client is the live channel, or nil.
func (l *Link) Client() *Client {
	if l == nil {
		return nil
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.client
}

// TakeNotice returns the pending notice, once.
func (l *Link) TakeNotice() string {
	if l == nil {
		return ""
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	n := l.notice
	l.notice = ""
	return n
}

// Close ends the channel with the sandbox; its end is then no fallback.
func (l *Link) Close() {
	if l == nil {
		return
	}
	l.mu.Lock()
	l.closed = true
	c := l.client
	l.mu.Unlock()
	if c != nil {
		c.Close()
	}
}

// errNoReply: the helper did not answer within a command's timeout and
// the graces.
var errNoReply = errors.New("no reply in time")

// Exec runs cmd through the channel when there is one; opt is complete.
// ok is false when the caller should run it with an exec of its own: no
// channel, or one that was down before the command was sent. A command in
// flight when the channel ends was killed with it (the helper's end of the
// wrapper's stdin closed, which ends the command as at a timeout); the
// host kills what may be left of it by its mark before it answers, and
// the result says so, with exit code 137, rather than running it a second
// time.
func (l *Link) Exec(ctx context.Context, cmd, dir string, opt sandbox.ExecOptions) (res sandbox.ExecResult, err error, ok bool) {
	c := l.Client()
	if c == nil {
		return res, nil, false
	}
	mark := cmdwrap.NewMark()
	res, err, stopped := l.watch(ctx, c, cmd, dir, mark, opt)
	if stopped != nil {
		return sandbox.ExecResult{}, fmt.Errorf("exec: %w", stopped), true
	}
	switch {
	case err == nil:
		res.Notice = l.TakeNotice()
		return res, nil, true
	case errors.Is(err, ErrNotSent):
		l.Down(err)
		return res, nil, false
	case errors.Is(err, ErrDown):
		l.Down(err)
		if serr := l.host.StoppedError(ctx); serr != nil {
			return res, fmt.Errorf("exec: %w", serr), true
		}
		l.host.Kill(ctx, mark)
		return sandbox.ExecResult{ExitCode: 137, TimedOut: errors.Is(err, errNoReply), Notice: l.TakeNotice()}, nil, true
	}
	return res, fmt.Errorf("exec: %w", err), true
}

// watch runs cmd through c while it watches the sandbox: one that ends
// under a command (gVisor ends the whole sandbox at its process or memory
// limit) may leave the channel's stream open, so the reply would never
// come. Once the sandbox is seen stopped, the channel is let go and
// stopped says why; a helper that does not answer within the command's
// timeout and the graces is let go too (the command then counts as killed
// with it, as at any end of the channel).
func (l *Link) watch(ctx context.Context, c *Client, cmd, dir, mark string, opt sandbox.ExecOptions) (res sandbox.ExecResult, err, stopped error) {
	// The helper waits its own grace past the timeout (for the watchdog)
	// before it kills from a second wrapper and answers: the host waits
	// for that, and its own grace on top. The call itself runs under the
	// caller's ctx.
	deadline := time.NewTimer(opt.Timeout + KillGrace + ReplyGrace)
	defer deadline.Stop()
	type reply struct {
		res sandbox.ExecResult
		err error
	}
	got := make(chan reply, 1)
	go func() {
		r, err := c.Exec(ctx, cmd, dir, mark, opt)
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
			l.Down(fmt.Errorf("no reply %s past the command's timeout", KillGrace+ReplyGrace)) // ends c, and so the call in flight
			<-got
			return sandbox.ExecResult{}, fmt.Errorf("%w: %w", ErrDown, errNoReply), nil
		case <-timer.C:
			if !l.host.SeenStopped(ctx) {
				poll = min(poll*2, 5*time.Second)
				timer.Reset(poll)
				continue
			}
			serr := l.host.StoppedError(ctx)
			if serr == nil {
				serr = fmt.Errorf("sandbox %s: %w", l.name, sandbox.ErrStopped)
			}
			l.Down(serr) // ends c, and so the call in flight
			<-got
			return sandbox.ExecResult{}, nil, serr
		}
	}
}

// File runs a file operation through the channel when there is one,
// after usable (the sandbox's own check that it is open), bounded by
// timeout; ok is false when the caller should run it with an exec of its
// own. File operations are safe to repeat, so one in flight when the
// channel ends is run again that way.
func File[T any](ctx context.Context, l *Link, usable func() error, timeout time.Duration, do func(ctx context.Context, c *Client) (T, error)) (v T, err error, ok bool) {
	c := l.Client()
	if c == nil {
		return v, nil, false
	}
	if err := usable(); err != nil {
		return v, err, true
	}
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	v, err = do(ctx, c)
	if errors.Is(err, ErrDown) {
		l.Down(err)
		return v, nil, false
	}
	return v, err, true
}
