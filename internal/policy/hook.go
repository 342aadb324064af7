package policy

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"strings"
	"time"
)

// HookCall is what the pre-tool hook reads on its stdin, as one JSON
// object on one line: {"task_id", "tool", "arguments" (the call's JSON
// object as the model sent it, compacted), "workspace"}.
type HookCall struct {
	TaskID    string          `json:"task_id"`
	Tool      string          `json:"tool"`
	Arguments json.RawMessage `json:"arguments"`
	Workspace string          `json:"workspace"`
}

// Decision is the policy's answer about one call. Reason explains a
// refusal in a sentence meant for the model and the trajectory.
type Decision struct {
	Allow  bool
	Reason string
}

// ErrHookFailed marks a hook that gave no clear answer: it could not be
// started, crashed, outlived its timeout or printed something else than a
// decision. The call is refused all the same.
var ErrHookFailed = errors.New("pre-tool hook failed")

// Limits on what is read from the hook and shown of it.
const (
	maxHookOutput = 64 << 10
	maxReason     = 2000
	// hookWaitDelay bounds the wait for the hook's output once it has
	// exited or been killed, in case something it started holds the pipes.
	hookWaitDelay = 2 * time.Second
)

// CheckHook runs the pre-tool hook on call and returns its decision. With
// no hook, every call is allowed.
//
// The hook is run directly (no shell), with call as JSON on its stdin and
// an environment of PATH and HOME (the runner's) and RUNNER_TASK_ID only:
// nothing else of the runner's environment, which holds the API key,
// reaches it. It runs in its own process group, killed whole at the
// timeout. Its answer:
//
//   - exit 0 with nothing on stdout, or {"decision":"allow"}: allowed;
//   - exit 0 with {"decision":"deny","reason":"..."}: refused for reason;
//   - exit 2: refused, stderr being the reason;
//   - any other exit, a timeout, an unknown decision or anything else on
//     stdout: refused (fail closed), and err wraps ErrHookFailed.
//
// A deliberate refusal returns a nil error. When ctx ends first the call
// is refused and err is ctx's error.
func (p Policy) CheckHook(ctx context.Context, call HookCall) (Decision, error) {
	if p.Hook == "" {
		return Decision{Allow: true}, nil
	}
	if call.Workspace == "" {
		call.Workspace = Workspace
	}
	var input bytes.Buffer
	enc := json.NewEncoder(&input)
	enc.SetEscapeHTML(false) // the arguments as written: "a && b", not "a \u0026\u0026 b"
	if err := enc.Encode(call); err != nil {
		return failed("the call could not be encoded for the pre-tool hook: %v", err)
	}
	timeout := p.HookTimeout
	if timeout <= 0 {
		timeout = DefaultHookTimeout
	}
	hctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	cmd := exec.CommandContext(hctx, p.Hook)
	cmd.Env = hookEnv(call.TaskID)
	cmd.Stdin = &input
	var stdout, stderr cappedBuffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	cmd.WaitDelay = hookWaitDelay
	ownProcessGroup(cmd)
	runErr := cmd.Run()

	var exit *exec.ExitError
	switch {
	case ctx.Err() != nil:
		return Decision{Reason: "the run was stopped before the pre-tool hook answered"}, ctx.Err()
	case hctx.Err() != nil:
		return failed("the pre-tool hook did not answer within %s", timeout)
	case cmd.ProcessState == nil:
		return failed("the pre-tool hook could not be started: %v", runErr)
	case errors.As(runErr, &exit) && exit.ExitCode() == 2:
		if why := clip(stderr.String()); why != "" {
			return Decision{Reason: "the pre-tool hook denied it: " + why}, nil
		}
		return Decision{Reason: "the pre-tool hook denied it (exit 2, no reason given)"}, nil
	case !cmd.ProcessState.Success():
		msg := fmt.Sprintf("the pre-tool hook failed (%s)", cmd.ProcessState)
		if tail := clip(stderr.String()); tail != "" {
			msg += ": " + tail
		}
		return failed("%s", msg)
	}
	return decide(stdout.Bytes())
}

// decide reads the decision a hook that exited 0 printed.
func decide(out []byte) (Decision, error) {
	if len(bytes.TrimSpace(out)) == 0 {
		return Decision{Allow: true}, nil
	}
	var d struct {
		Decision *string `json:"decision"`
		Reason   string  `json:"reason"`
	}
	dec := json.NewDecoder(bytes.NewReader(out))
	if err := dec.Decode(&d); err != nil || d.Decision == nil || dec.More() {
		return failed("the pre-tool hook printed %q, not a decision such as {\"decision\":\"deny\",\"reason\":\"...\"}",
			clip(string(out)))
	}
	switch *d.Decision {
	case "allow":
		return Decision{Allow: true}, nil
	case "deny":
		if why := clip(d.Reason); why != "" {
			return Decision{Reason: "the pre-tool hook denied it: " + why}, nil
		}
		return Decision{Reason: "the pre-tool hook denied it (no reason given)"}, nil
	}
	return failed("the pre-tool hook gave the unknown decision %q (want \"allow\" or \"deny\")", clip(*d.Decision))
}

// failed refuses a call because the hook gave no clear answer.
func failed(format string, args ...any) (Decision, error) {
	reason := fmt.Sprintf(format, args...)
	return Decision{Reason: reason}, fmt.Errorf("%w: %s", ErrHookFailed, reason)
}

// hookEnv is the hook's whole environment.
func hookEnv(taskID string) []string {
	var env []string
	for _, k := range []string{"PATH", "HOME"} {
		if v, ok := os.LookupEnv(k); ok {
			env = append(env, k+"="+v)
		}
	}
	return append(env, "RUNNER_TASK_ID="+taskID)
}

// clip trims s and keeps at most maxReason bytes of it, on a rune boundary.
func clip(s string) string {
	s = strings.TrimSpace(s)
	if len(s) <= maxReason {
		return s
	}
	return strings.ToValidUTF8(s[:maxReason], "") + "..."
}

// cappedBuffer keeps the first maxHookOutput bytes written to it and
// discards the rest, without failing the writer. (It is no io.ReaderFrom,
// so io.Copy goes through Write and the cap.)
type cappedBuffer struct{ buf bytes.Buffer }

var _ io.Writer = (*cappedBuffer)(nil)

func (b *cappedBuffer) Write(p []byte) (int, error) {
	if room := maxHookOutput - b.buf.Len(); room > 0 {
		b.buf.Write(p[:min(len(p), room)])
	}
	return len(p), nil
}

func (b *cappedBuffer) Bytes() []byte  { return b.buf.Bytes() }
func (b *cappedBuffer) String() string { return b.buf.String() }
