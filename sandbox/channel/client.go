package channel

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"sync"
	"time"

	"github.com/runner-dev/runner/sandbox"
)

// ErrDown is what every call returns once the channel has ended (the
// helper exited or was killed, or it sent a malformed frame). Calls in
// flight then return it at once; nothing waits on a dead helper.
var ErrDown = errors.New("the sandbox's command channel is down")

// ErrNotSent wraps ErrDown for a request the channel was down before it
// was sent: nothing of it ran, and it may be tried another way.
var ErrNotSent = errors.New("not sent")

// Client is the host's end of a channel. Its methods may be called from
// several goroutines at once: requests are multiplexed, each under its own
// id, and the helper serves them concurrently.
type Client struct {
	w     io.WriteCloser
	hello Hello

	wmu sync.Mutex // one frame at a time on w

	mu      sync.Mutex
	next    uint32
	pending map[uint32]chan frame
	err     error // why the channel is down; nil while it is up
	down    chan struct{}
}

// helloTimeout bounds the wait for the helper's hello.
var helloTimeout = 30 * time.Second

// Dial speaks to a helper that reads r's other end and writes w's: it
// reads the helper's hello, checks the protocol version, and serves replies
// until r ends. Closing the Client closes w, which ends the helper.
func Dial(ctx context.Context, r io.Reader, w io.WriteCloser) (*Client, error) {
	type result struct {
		f   frame
		err error
	}
	got := make(chan result, 1)
	go func() {
		f, err := readFrame(r)
		got <- result{f, err}
	}()
	var res result
	t := time.NewTimer(helloTimeout)
	defer t.Stop()
	select {
	case res = <-got:
	case <-ctx.Done():
		w.Close()
		return nil, ctx.Err()
	case <-t.C:
		w.Close()
		return nil, fmt.Errorf("channel: no hello from the helper within %s", helloTimeout)
	}
	if res.err != nil {
		w.Close()
		return nil, fmt.Errorf("channel: read the helper's hello: %w", res.err)
	}
	var h Hello
	if res.f.kind != KindHello || json.Unmarshal(res.f.payload, &h) != nil {
		w.Close()
		return nil, fmt.Errorf("channel: %w: the first frame is not a hello", ErrMalformed)
	}
	if h.Protocol != Protocol || h.Version != Version {
		w.Close()
		return nil, fmt.Errorf("channel: the helper speaks %q version %d, not %q version %d", h.Protocol, h.Version, Protocol, Version)
	}
	c := &Client{w: w, hello: h, pending: map[uint32]chan frame{}, down: make(chan struct{})}
	go c.serve(r)
	return c, nil
}

// HelperPID is the helper's process id inside the sandbox.
func (c *Client) HelperPID() int { return c.hello.PID }

// Down is closed when the channel ends; Err then says why.
func (c *Client) Down() <-chan struct{} { return c.down }

// Err is nil while the channel is up, and an error wrapping ErrDown after.
func (c *Client) Err() error {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.err
}

// Close ends the channel: the helper sees its input end and exits.
func (c *Client) Close() error {
	c.fail(errors.New("closed"))
	return nil
}

// serve hands each frame to the request it belongs to, until r fails.
func (c *Client) serve(r io.Reader) {
	for {
		f, err := readFrame(r)
		if err != nil {
			if err == io.EOF {
				err = errors.New("the helper's output ended")
			}
			c.fail(err)
			return
		}
		if f.kind != KindReply && f.kind != KindData {
			c.fail(fmt.Errorf("%w: kind %d from the helper", ErrMalformed, f.kind))
			return
		}
		c.mu.Lock()
		ch, ok := c.pending[f.id]
		if ok && f.kind == KindReply {
			delete(c.pending, f.id)
		}
		c.mu.Unlock()
		if !ok {
			// A reply to a request given up on is dropped; one to a request
			// never made is a helper out of step.
			if f.id == 0 || f.id > c.lastID() {
				c.fail(fmt.Errorf("%w: reply to request %d, never made", ErrMalformed, f.id))
				return
			}
			continue
		}
		select {
		case ch <- f:
		case <-c.down:
			return
		}
	}
}

func (c *Client) lastID() uint32 {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.next
}

// fail ends the channel with cause, once.
func (c *Client) fail(cause error) {
	c.mu.Lock()
	if c.err != nil {
		c.mu.Unlock()
		return
	}
	c.err = fmt.Errorf("%w: %w", ErrDown, cause)
	close(c.down)
	c.mu.Unlock()
	c.w.Close()
}

// start sends req under a fresh id and returns where its frames arrive.
func (c *Client) start(req Request) (uint32, chan frame, error) {
	body, err := json.Marshal(req)
	if err != nil {
		return 0, nil, err
	}
	c.mu.Lock()
	if c.err != nil {
		c.mu.Unlock()
		return 0, nil, fmt.Errorf("%w: %w", ErrNotSent, c.err)
	}
	c.next++
	id := c.next
	ch := make(chan frame, 1)
	c.pending[id] = ch
	c.mu.Unlock()
	if err := c.send(KindRequest, id, body); err != nil {
		c.forget(id)
		return 0, nil, err
	}
	return id, ch, nil
}

// send writes one frame; a failed write ends the channel.
func (c *Client) send(kind Kind, id uint32, body []byte) error {
	c.wmu.Lock()
	err := writeFrame(c.w, kind, id, body)
	c.wmu.Unlock()
	if err != nil {
		c.fail(fmt.Errorf("write to the helper: %w", err))
		return c.Err()
	}
	return nil
}

func (c *Client) forget(id uint32) {
	c.mu.Lock()
	delete(c.pending, id)
	c.mu.Unlock()
}

// cancelGrace is how long a cancelled request may take to reply.
const cancelGrace = 20 * time.Second

// call sends req and waits for its reply. When ctx ends first, it asks the
// helper to cancel the request and waits a while for the reply, so that an
// exec's processes are gone when it returns.
func (c *Client) call(ctx context.Context, req Request) (Reply, error) {
	id, ch, err := c.start(req)
	if err != nil {
		return Reply{}, err
	}
	var f frame
	select {
	case f = <-ch:
	case <-c.down:
		return Reply{}, c.Err()
	case <-ctx.Done():
		body, _ := json.Marshal(Request{Op: OpCancel, Target: id})
		if c.send(KindRequest, 0, body) == nil {
			t := time.NewTimer(cancelGrace)
			select {
			case <-ch:
			case <-c.down:
			case <-t.C:
			}
			t.Stop()
		}
		c.forget(id)
		return Reply{}, ctx.Err()
	}
	if f.kind != KindReply {
		c.fail(fmt.Errorf("%w: data frame for request %d (%s)", ErrMalformed, id, req.Op))
		return Reply{}, c.Err()
	}
	var rep Reply
	if err := json.Unmarshal(f.payload, &rep); err != nil {
		c.fail(fmt.Errorf("%w: reply to request %d: %v", ErrMalformed, id, err))
		return Reply{}, c.Err()
	}
	return rep, rep.Error.err()
}

// Exec runs cmd with the command wrapper in dir (absolute, inside the
// workspace), its processes marked mark (cmdwrap.NewMark), so that the host
// can kill them itself if the channel ends under the command; opt is
// complete (no zero values). See sandbox.Sandbox.Exec.
func (c *Client) Exec(ctx context.Context, cmd, dir, mark string, opt sandbox.ExecOptions) (sandbox.ExecResult, error) {
	rep, err := c.call(ctx, Request{Op: OpExec, Cmd: cmd, Env: opt.Env, Dir: dir, Mark: mark, TimeoutNS: int64(opt.Timeout), MaxOutput: opt.MaxOutput})
	if err != nil {
		return sandbox.ExecResult{}, err
	}
	if rep.Exec == nil {
		c.fail(fmt.Errorf("%w: exec reply without a result", ErrMalformed))
		return sandbox.ExecResult{}, c.Err()
	}
	return *rep.Exec, nil
}

// ReadFile reads the regular file abs. See sandbox.Sandbox.ReadFile.
func (c *Client) ReadFile(ctx context.Context, abs string) ([]byte, error) {
	rep, err := c.call(ctx, Request{Op: OpRead, Path: abs})
	if err != nil {
		return nil, err
	}
	if len(rep.Data) > sandbox.MaxReadSize {
		c.fail(fmt.Errorf("%w: %d bytes read, over the limit", ErrMalformed, len(rep.Data)))
		return nil, c.Err()
	}
	if rep.Data == nil {
		rep.Data = []byte{}
	}
	return rep.Data, nil
}

// WriteFile replaces the content of abs. See sandbox.Sandbox.WriteFile.
func (c *Client) WriteFile(ctx context.Context, abs string, data []byte, mode fs.FileMode) error {
	_, err := c.call(ctx, Request{Op: OpWrite, Path: abs, Data: data, Mode: mode & fs.ModePerm})
	return err
}

// ListFiles lists abs; paths are relative to the workspace and sorted.
// See sandbox.Sandbox.ListFiles.
func (c *Client) ListFiles(ctx context.Context, abs string, recursive bool) ([]sandbox.FileInfo, error) {
	rep, err := c.call(ctx, Request{Op: OpList, Path: abs, Recursive: recursive})
	if err != nil {
		return nil, err
	}
	return rep.Files, nil
}

// Tar streams a tar of the workspace, taken while the sandbox runs (so
// not a frozen snapshot: see sandbox.Sandbox.Snapshot for that). The
// channel serves other requests meanwhile only as fast as the stream is
// read. Closing the reader early cancels the stream.
func (c *Client) Tar(ctx context.Context) (io.ReadCloser, error) {
	id, ch, err := c.start(Request{Op: OpTar})
	if err != nil {
		return nil, err
	}
	pr, pw := io.Pipe()
	go func() {
		for {
			var f frame
			select {
			case f = <-ch:
			case <-c.down:
				pw.CloseWithError(c.Err())
				return
			case <-ctx.Done():
				c.forget(id)
				body, _ := json.Marshal(Request{Op: OpCancel, Target: id})
				c.send(KindRequest, 0, body)
				pw.CloseWithError(ctx.Err())
				return
			}
			if f.kind == KindReply {
				var rep Reply
				if err := json.Unmarshal(f.payload, &rep); err != nil {
					c.fail(fmt.Errorf("%w: reply to request %d: %v", ErrMalformed, id, err))
					pw.CloseWithError(c.Err())
					return
				}
				pw.CloseWithError(rep.Error.err())
				return
			}
			if _, err := pw.Write(f.payload); err != nil {
				// The reader gave up: the rest is read and dropped.
				body, _ := json.Marshal(Request{Op: OpCancel, Target: id})
				c.send(KindRequest, 0, body)
				go func() {
					for {
						select {
						case f := <-ch:
							if f.kind == KindReply {
								return
							}
						case <-c.down:
							return
						}
					}
				}()
				return
			}
		}
	}()
	return pr, nil
}
