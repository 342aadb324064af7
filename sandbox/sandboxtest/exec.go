package sandboxtest

import (
	"context"
	"errors"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/runner-dev/runner/sandbox"
)

func testExec(t *testing.T, tg Target) {
	t.Run("Results", func(t *testing.T) { execResults(t, tg) })
	t.Run("TimeoutKillsEveryProcess", func(t *testing.T) { ExecTimeoutKillsEveryProcess(t, tg, tg.Image) })
	t.Run("BackgroundChildHoldingOutput", func(t *testing.T) { execBackgroundChild(t, tg) })
	t.Run("OutputCapped", func(t *testing.T) { execOutputCapped(t, tg) })
	t.Run("CancelKillsCommand", func(t *testing.T) { execCancelKillsCommand(t, tg) })
}

// Exit codes, streams, environment and working directory are results; a
// directory outside the workspace is refused.
func execResults(t *testing.T, tg Target) {
	sb := tg.start(t, sandbox.Config{Env: []string{"FROM_CONFIG=yes", "PYTHONPYCACHEPREFIX=/tmp/own"}})
	output(t, sb, "mkdir -p sub/dir")
	tests := []struct {
		name                   string
		cmd                    string
		opt                    sandbox.ExecOptions
		code                   int
		stdout, stderr, output string
	}{
		{"exit code is a result", "echo bye; exit 3", sandbox.ExecOptions{}, 3, "bye\n", "", "bye\n"},
		{"streams kept apart and interleaved in order",
			"echo out1; sleep 0.2; echo err1 >&2; sleep 0.2; echo out2", sandbox.ExecOptions{},
			0, "out1\nout2\n", "err1\n", "out1\nerr1\nout2\n"},
		{"no stdin", "cat; read x; echo \"read:$?:$x\"", sandbox.ExecOptions{}, 0, "read:1:\n", "", "read:1:\n"},
		{"non-interactive environment",
			`echo "$PAGER $GIT_PAGER $GIT_TERMINAL_PROMPT $GIT_EDITOR $DEBIAN_FRONTEND $FROM_CONFIG $EXTRA"`,
			sandbox.ExecOptions{Env: []string{"EXTRA=given"}}, 0,
			"cat cat 0 true noninteractive yes given\n", "", "cat cat 0 true noninteractive yes given\n"},
		{"no bytecode in the workspace, the config's env winning", `echo "$PYTHONDONTWRITEBYTECODE $PYTHONPYCACHEPREFIX"`,
			sandbox.ExecOptions{}, 0, "1 /tmp/own\n", "", "1 /tmp/own\n"},
		{"working directory", "pwd", sandbox.ExecOptions{Dir: "sub/dir"}, 0, "/workspace/sub/dir\n", "", "/workspace/sub/dir\n"},
		{"binary-safe output", `printf 'a\000b'`, sandbox.ExecOptions{}, 0, "a\x00b", "", "a\x00b"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			res := run(t, sb, tt.cmd, tt.opt)
			if res.ExitCode != tt.code || res.Stdout != tt.stdout || res.Stderr != tt.stderr || res.Output != tt.output {
				t.Errorf("got code %d stdout %q stderr %q output %q\nwant code %d stdout %q stderr %q output %q",
					res.ExitCode, res.Stdout, res.Stderr, res.Output, tt.code, tt.stdout, tt.stderr, tt.output)
			}
			if res.TimedOut || res.Truncated || res.Detached {
				t.Errorf("flags: timed out %v, truncated %v, detached %v; want none", res.TimedOut, res.Truncated, res.Detached)
			}
		})
	}
	if _, err := sb.Exec(context.Background(), "pwd", sandbox.ExecOptions{Dir: "../etc"}); !errors.Is(err, sandbox.ErrOutsideWorkspace) {
		t.Errorf("Exec in ../etc: %v, want ErrOutsideWorkspace", err)
	}
}

// A command that outlives its timeout is killed with everything it started,
// including processes that ignore SIGTERM, start a session of their own or
// clear their environment. It is exported so that a backend can run it
// against other images (another shell, another setsid) than tg.Image.
func ExecTimeoutKillsEveryProcess(t *testing.T, tg Target, image string) {
	sb := tg.start(t, sandbox.Config{Image: image})
	cmd := `trap '' TERM
(trap '' TERM; exec sleep 1001) &
setsid sh -c 'trap "" TERM; exec sleep 1002' &
env -i /bin/sh -c 'trap "" TERM; exec sleep 1003' &
sleep 1004 >/dev/null 2>&1 &
echo started
exec sleep 1000`
	begin := time.Now()
	res := run(t, sb, cmd, sandbox.ExecOptions{Timeout: 2 * time.Second})
	took := time.Since(begin)
	if !res.TimedOut {
		t.Errorf("TimedOut = false, want true (exit %d, output %q)", res.ExitCode, res.Output)
	}
	if res.Stdout != "started\n" {
		t.Errorf("stdout = %q, want the output before the timeout", res.Stdout)
	}
	if strings.Contains(res.Output, "runner-exec-") {
		t.Errorf("the watchdog's mark leaked into the output: %q", res.Output)
	}
	if took > 30*time.Second {
		t.Errorf("Exec took %s for a 2s timeout", took)
	}
	if left := processes(t, sb, "sleep 100"); left != "" {
		t.Errorf("processes survived the timeout:\n%s", left)
	}
}

// A background child that keeps stdout open must not hold Exec hostage.
func execBackgroundChild(t *testing.T, tg Target) {
	sb := tg.start(t, sandbox.Config{})
	begin := time.Now()
	res := run(t, sb, "sleep 30 & echo started", sandbox.ExecOptions{Timeout: time.Minute})
	if took := time.Since(begin); took > 15*time.Second {
		t.Errorf("Exec took %s; want it back soon after the command exited", took)
	}
	if res.ExitCode != 0 || res.Stdout != "started\n" || !res.Detached || res.TimedOut {
		t.Errorf("got %+v; want exit 0, stdout \"started\\n\", Detached", res)
	}
}

// 50 MiB of output keep their head and tail within the cap, and are never
// held whole in the caller's memory.
func execOutputCapped(t *testing.T, tg Target) {
	sb := tg.start(t, sandbox.Config{})
	const total = 50 << 20
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	res := run(t, sb, "yes 0123456789abcdef | head -c 52428800; echo END", sandbox.ExecOptions{MaxOutput: 4096})
	runtime.ReadMemStats(&after)
	if !res.Truncated {
		t.Errorf("Truncated = false for 50 MiB of output")
	}
	if len(res.Stdout) > 4096+100 || len(res.Output) > 4096+100 {
		t.Errorf("kept %d bytes of stdout and %d of output, want about 4096", len(res.Stdout), len(res.Output))
	}
	if !strings.HasPrefix(res.Output, "0123456789abcdef\n") || !strings.HasSuffix(res.Output, "END\n") {
		t.Errorf("output does not keep head and tail: %.40q ... %q", res.Output, res.Output[max(0, len(res.Output)-40):])
	}
	if want := int64(total + 4 - 4096); res.Dropped != want {
		t.Errorf("Dropped = %d, want %d", res.Dropped, want)
	}
	if !strings.Contains(res.Output, "bytes of output dropped") {
		t.Errorf("output does not say that bytes were dropped")
	}
	if grew := after.TotalAlloc - before.TotalAlloc; grew > 16<<20 {
		t.Errorf("allocated %d MiB while streaming 50 MiB of output", grew>>20)
	}
}

// Cancelling the caller's context ends the command inside the sandbox too.
func execCancelKillsCommand(t *testing.T, tg Target) {
	sb := tg.start(t, sandbox.Config{})
	ctx, cancel := context.WithTimeout(context.Background(), time.Second)
	defer cancel()
	_, err := sb.Exec(ctx, "trap '' TERM; sleep 1005", sandbox.ExecOptions{Timeout: time.Hour})
	if !errors.Is(err, context.DeadlineExceeded) {
		t.Errorf("Exec = %v, want the context's error", err)
	}
	if left := processes(t, sb, "sleep 1005"); left != "" {
		t.Errorf("the command survived its cancelled context:\n%s", left)
	}
}
