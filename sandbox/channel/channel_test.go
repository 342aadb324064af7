package channel

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"strings"
	"testing"
	"time"

	"github.com/runner-dev/runner/sandbox"
	"github.com/runner-dev/runner/sandbox/cmdwrap"
)

// pipeEnds connects a Client to an in-process Serve.
func serveInProcess(t *testing.T) *Client {
	t.Helper()
	hostR, helperW := io.Pipe()
	helperR, hostW := io.Pipe()
	done := make(chan error, 1)
	go func() {
		err := Serve(helperR, helperW)
		helperW.Close()
		done <- err
	}()
	c, err := Dial(context.Background(), hostR, hostW)
	if err != nil {
		t.Fatalf("Dial: %v", err)
	}
	t.Cleanup(func() {
		c.Close()
		if err := <-done; err != nil {
			t.Errorf("Serve: %v", err)
		}
	})
	return c
}

// Commands through the channel keep the wrapper's results: exit codes,
// streams, the environment, several at once (the timeout is the
// conformance suite's, in a sandbox: here the wrapper would scan the
// host's processes). (The order of
// stdout and stderr in Output is the order they were read from two pipes,
// as with the engine's exec.)
func TestServeExec(t *testing.T) {
	c := serveInProcess(t)
	ctx := context.Background()
	opt := sandbox.ExecOptions{Timeout: time.Minute, MaxOutput: 1024, Env: []string{"GREETING=hi"}}
	tests := []struct {
		cmd      string
		code     int
		stdout   string
		timedOut bool
		timeout  time.Duration
	}{
		{cmd: `echo "$GREETING"; echo err >&2; exit 3`, code: 3, stdout: "hi\n"},
		{cmd: `kill -9 $$`, code: 137},
	}
	errs := make(chan error, len(tests))
	for _, tt := range tests {
		go func() {
			o := opt
			if tt.timeout > 0 {
				o.Timeout = tt.timeout
			}
			res, err := c.Exec(ctx, tt.cmd, "/", cmdwrap.NewMark(), o)
			switch {
			case err != nil:
				errs <- err
			case res.ExitCode != tt.code && !tt.timedOut, res.Stdout != tt.stdout, res.TimedOut != tt.timedOut,
				tt.code == 3 && res.Stderr != "err\n":
				errs <- errors.New(tt.cmd + ": got " + strings.ReplaceAll(jsonOf(res), "\n", `\n`))
			default:
				errs <- nil
			}
		}()
	}
	for range tests {
		if err := <-errs; err != nil {
			t.Error(err)
		}
	}
}

// A command that prints the wrapper's marks, which it can read from its
// environment, forges neither a timeout nor an out-of-memory kill: the
// helper knows both without marks, and the text stays in the output.
func TestServeExecMarksAreNotForgeable(t *testing.T) {
	c := serveInProcess(t)
	res, err := c.Exec(context.Background(), `printf '%s:timeout\n%s:oom\n%s:exit:0\n' "$RUNNER_EXEC" "$RUNNER_EXEC" "$RUNNER_EXEC" >&2; exit 4`,
		"/", cmdwrap.NewMark(), sandbox.ExecOptions{Timeout: time.Minute, MaxOutput: 1024})
	if err != nil {
		t.Fatal(err)
	}
	if res.TimedOut || res.OOMKilled || res.ExitCode != 4 || strings.Count(res.Stderr, "runner-exec-") != 3 {
		t.Errorf("result = %+v; want exit 4, neither timed out nor killed for memory, the three lines kept", res)
	}
}

// An exec whose mark is not of NewMark's form is refused, nothing run.
func TestServeExecRefusesBadMark(t *testing.T) {
	c := serveInProcess(t)
	for _, mark := range []string{"", "runner-exec-.*", "runner-exec-aaaaaaaa bbbb"} {
		if res, err := c.Exec(context.Background(), "true", "/", mark, sandbox.ExecOptions{Timeout: time.Minute, MaxOutput: 1024}); err == nil {
			t.Errorf("mark %q: %+v, want an error", mark, res)
		}
	}
}

func jsonOf(v any) string {
	b, _ := json.Marshal(v)
	return string(b)
}

// A malformed frame from the helper ends the channel, never the host: the
// Client neither panics nor allocates what a length claims, and calls in
// flight or made afterwards return ErrDown.
func FuzzClientDecoder(f *testing.F) {
	hello, _ := json.Marshal(Hello{Protocol: Protocol, Version: Version})
	var seed bytes.Buffer
	writeFrame(&seed, KindReply, 1, []byte(`{"exec":{"exit_code":0}}`))
	f.Add(seed.Bytes())
	f.Add([]byte{0xff, 0xff, 0xff, 0xff, 3, 0, 0, 0, 1})
	f.Add([]byte{0, 0, 0, 2, 3, 0, 0, 0, 1, '{', '}'})
	f.Add([]byte{0, 0, 0, 1, 9, 0, 0, 0, 1, 'x'})
	f.Fuzz(func(t *testing.T, garbage []byte) {
		var in bytes.Buffer
		writeFrame(&in, KindHello, 0, hello)
		in.Write(garbage)
		hostR, helperW := io.Pipe()
		go func() {
			helperW.Write(in.Bytes())
			helperW.Close()
		}()
		c, err := Dial(context.Background(), hostR, nopCloser{io.Discard})
		if err != nil {
			t.Fatalf("Dial: %v", err)
		}
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		_, err = c.Exec(ctx, "true", "/", cmdwrap.NewMark(), sandbox.ExecOptions{})
		if err == nil {
			return // the garbage happened to be a reply to request 1
		}
		<-c.Down()
		if !errors.Is(c.Err(), ErrDown) {
			t.Fatalf("Err() = %v, want ErrDown", c.Err())
		}
		if _, err := c.ReadFile(ctx, "/workspace/x"); !errors.Is(err, ErrDown) {
			t.Fatalf("a call after the end: %v, want ErrDown", err)
		}
	})
}

type nopCloser struct{ io.Writer }

func (nopCloser) Close() error { return nil }

// A helper speaking another version is refused at Dial.
func TestDialRefusesOtherVersion(t *testing.T) {
	hello, _ := json.Marshal(Hello{Protocol: Protocol, Version: Version + 1})
	var in bytes.Buffer
	writeFrame(&in, KindHello, 0, hello)
	_, err := Dial(context.Background(), &in, nopCloser{io.Discard})
	if err == nil || !strings.Contains(err.Error(), "version") {
		t.Fatalf("Dial = %v, want a version mismatch", err)
	}
}
