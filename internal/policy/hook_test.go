package policy

import (
	"context"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// hookScript writes an executable shell script and returns its path.
func hookScript(t *testing.T, body string) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), "hook.sh")
	if err := os.WriteFile(p, []byte("#!/bin/sh\n"+body), 0o755); err != nil {
		t.Fatal(err)
	}
	return p
}

var testCall = HookCall{TaskID: "t1", Tool: "run_command", Arguments: json.RawMessage(`{"command": "make && echo <ok>"}`)}

func TestCheckHookDecisions(t *testing.T) {
	tests := []struct {
		name    string
		script  string
		allow   bool
		reason  string // a substring of the reason
		failure bool   // err wraps ErrHookFailed
	}{
		{name: "silent exit 0 allows", script: "cat >/dev/null\nexit 0\n", allow: true},
		{name: "stdin unread, exit 0 allows", script: "exit 0\n", allow: true},
		{name: "allow decision", script: `echo '{"decision":"allow"}'`, allow: true},
		{name: "deny decision", script: `echo '{"decision":"deny","reason":"no pushing from agents"}'`,
			reason: "the pre-tool hook denied it: no pushing from agents"},
		{name: "deny decision without reason", script: `echo '{"decision":"deny"}'`, reason: "no reason given"},
		{name: "exit 2 with a reason", script: "echo 'network commands are not allowed' >&2\nexit 2\n",
			reason: "the pre-tool hook denied it: network commands are not allowed"},
		{name: "exit 2 wins over an allow", script: "echo '{\"decision\":\"allow\"}'\nexit 2\n", reason: "exit 2, no reason given"},
		{name: "crash", script: "echo 'boom: line 3' >&2\nexit 1\n", reason: "the pre-tool hook failed (exit status 1): boom: line 3",
			failure: true},
		{name: "killed by a signal", script: "kill -9 $$\n", reason: "signal: killed", failure: true},
		{name: "garbage on stdout", script: "echo 'sure, go ahead'\n", reason: `printed "sure, go ahead"`, failure: true},
		{name: "two decisions", script: `echo '{"decision":"allow"} {"decision":"deny"}'`, reason: "not a decision", failure: true},
		{name: "no decision key", script: `echo '{"allow":true}'`, reason: "not a decision", failure: true},
		{name: "unknown decision", script: `echo '{"decision":"maybe"}'`, reason: `unknown decision "maybe"`, failure: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p := Policy{Hook: hookScript(t, tt.script), HookTimeout: 10 * time.Second}
			d, err := p.CheckHook(context.Background(), testCall)
			if d.Allow != tt.allow || !strings.Contains(d.Reason, tt.reason) {
				t.Errorf("CheckHook = %+v, want allow %v with a reason containing %q", d, tt.allow, tt.reason)
			}
			if got := errors.Is(err, ErrHookFailed); got != tt.failure || (!tt.failure && err != nil) {
				t.Errorf("CheckHook error = %v, want ErrHookFailed: %v", err, tt.failure)
			}
		})
	}
}

// The hook reads the call exactly, and sees none of the runner's
// environment but PATH, HOME and RUNNER_TASK_ID.
func TestCheckHookInputAndEnvironment(t *testing.T) {
	const canary = "sk-hook-canary-0123456789abcdef"
	t.Setenv("OPENAI_API_KEY", canary)
	t.Setenv("RUNNER_GIT_TOKEN", canary)
	t.Setenv("HOME", "/home/tester")
	out := t.TempDir()
	p := Policy{Hook: hookScript(t, "cat > "+out+"/stdin\nenv > "+out+"/env\n")}
	d, err := p.CheckHook(context.Background(), testCall)
	if !d.Allow || err != nil {
		t.Fatalf("CheckHook = %+v, %v; want allowed", d, err)
	}
	stdin, _ := os.ReadFile(filepath.Join(out, "stdin"))
	want := `{"task_id":"t1","tool":"run_command","arguments":{"command":"make && echo <ok>"},"workspace":"/workspace"}` + "\n"
	if string(stdin) != want {
		t.Errorf("the hook read\n%s\nwant\n%s", stdin, want)
	}
	env, _ := os.ReadFile(filepath.Join(out, "env"))
	if strings.Contains(string(env), canary) || strings.Contains(string(env), "OPENAI_API_KEY") {
		t.Errorf("the hook's environment holds the runner's secrets:\n%s", env)
	}
	vars := map[string]string{}
	for line := range strings.SplitSeq(strings.TrimSpace(string(env)), "\n") {
		k, v, _ := strings.Cut(line, "=")
		vars[k] = v
	}
	for k, v := range map[string]string{"RUNNER_TASK_ID": "t1", "HOME": "/home/tester", "PATH": os.Getenv("PATH")} {
		if vars[k] != v {
			t.Errorf("the hook sees %s=%q, want %q", k, vars[k], v)
		}
	}
	// The shell adds PWD, SHLVL and _ of its own; nothing else is there.
	for k := range vars {
		switch k {
		case "RUNNER_TASK_ID", "HOME", "PATH", "PWD", "SHLVL", "_", "OLDPWD":
		default:
			t.Errorf("the hook's environment has %s", k)
		}
	}
}

// A hook that hangs is killed at its timeout, with what it started, and
// the call is refused.
func TestCheckHookTimeout(t *testing.T) {
	marker := filepath.Join(t.TempDir(), "survived")
	pidFile := filepath.Join(t.TempDir(), "pid")
	p := Policy{Hook: hookScript(t, "(sleep 3; touch "+marker+") &\necho $! > "+pidFile+"\nsleep 60\n"), HookTimeout: 300 * time.Millisecond}
	begin := time.Now()
	d, err := p.CheckHook(context.Background(), testCall)
	if took := time.Since(begin); took > 5*time.Second {
		t.Errorf("CheckHook took %s with a 300ms timeout", took)
	}
	if d.Allow || !strings.Contains(d.Reason, "did not answer within 300ms") || !errors.Is(err, ErrHookFailed) {
		t.Errorf("CheckHook = %+v, %v; want a refusal for the timeout", d, err)
	}
	// The background process touches the marker when its sleep ends,
	// unless it was killed: wait for it to be gone, then look.
	b, err := os.ReadFile(pidFile)
	if err != nil {
		t.Fatalf("the hook did not record its background process: %v", err)
	}
	stat := "/proc/" + strings.TrimSpace(string(b)) + "/stat"
	for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(50 * time.Millisecond) {
		st, err := os.ReadFile(stat)
		if _, state, _ := strings.Cut(string(st), ") "); err != nil || strings.HasPrefix(state, "Z") {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the hook's background process still runs 10s after the timeout")
		}
	}
	if _, err := os.Stat(marker); err == nil {
		t.Errorf("a process the hook started outlived the timeout")
	}
}

func TestCheckHookWithoutAnswer(t *testing.T) {
	t.Run("no hook allows", func(t *testing.T) {
		if d, err := (Policy{}).CheckHook(context.Background(), testCall); !d.Allow || err != nil {
			t.Errorf("CheckHook = %+v, %v; want allowed", d, err)
		}
	})
	t.Run("missing hook refuses", func(t *testing.T) {
		p := Policy{Hook: filepath.Join(t.TempDir(), "gone")}
		d, err := p.CheckHook(context.Background(), testCall)
		if d.Allow || !strings.Contains(d.Reason, "could not be started") || !errors.Is(err, ErrHookFailed) {
			t.Errorf("CheckHook = %+v, %v; want a refusal", d, err)
		}
	})
	t.Run("invalid arguments refuse", func(t *testing.T) {
		p := Policy{Hook: hookScript(t, "exit 0\n")}
		call := testCall
		call.Arguments = json.RawMessage(`{"command":`)
		d, err := p.CheckHook(context.Background(), call)
		if d.Allow || !errors.Is(err, ErrHookFailed) {
			t.Errorf("CheckHook = %+v, %v; want a refusal", d, err)
		}
	})
	t.Run("a stopped run refuses", func(t *testing.T) {
		ctx, cancel := context.WithCancel(context.Background())
		p := Policy{Hook: hookScript(t, "sleep 60\n")}
		time.AfterFunc(200*time.Millisecond, cancel)
		d, err := p.CheckHook(ctx, testCall)
		if d.Allow || !errors.Is(err, context.Canceled) {
			t.Errorf("CheckHook = %+v, %v; want a refusal with context.Canceled", d, err)
		}
	})
	t.Run("huge output is cut", func(t *testing.T) {
		p := Policy{Hook: hookScript(t, "head -c 1000000 /dev/zero | tr '\\0' x >&2\nexit 2\n")}
		d, err := p.CheckHook(context.Background(), testCall)
		if d.Allow || err != nil || len(d.Reason) > maxReason+100 {
			t.Errorf("CheckHook = reason of %d bytes, %v; want a refusal with a short reason", len(d.Reason), err)
		}
	})
}
