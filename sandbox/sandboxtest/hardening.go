package sandboxtest

import (
	"context"
	"errors"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/runner-dev/runner/sandbox"
)

// The hardening is read back from inside the sandbox, where it matters.
func testHardening(t *testing.T, tg Target) {
	sb := tg.start(t, sandbox.Config{NoFile: 1000})
	status := output(t, sb, "cat /proc/self/status")
	want := []string{`(?m)^CapEff:\s+0000000000000000$`, `(?m)^CapPrm:\s+0000000000000000$`, `(?m)^CapBnd:\s+0000000000000000$`}
	if tg.Caps.NoNewPrivsShown {
		want = append(want, `(?m)^NoNewPrivs:\s+1$`)
	}
	for _, re := range want {
		if !regexp.MustCompile(re).MatchString(status) {
			t.Errorf("/proc/self/status does not match %s:\n%s", re, status)
		}
	}
	if got := output(t, sb, "id -u; id -g"); got != "1000\n1000" {
		t.Errorf("uid, gid = %q, want 1000 and 1000", got)
	}
	if got := output(t, sb, "ulimit -n"); got != "1000" {
		t.Errorf("open files limit = %q, want 1000", got)
	}
	if got := output(t, sb, "pwd"); got != sandbox.Workdir {
		t.Errorf("working directory = %q, want %s", got, sandbox.Workdir)
	}
	if res := run(t, sb, "ls -l /var/run/docker.sock /run/docker.sock", sandbox.ExecOptions{}); res.ExitCode == 0 {
		t.Errorf("the Docker socket is visible in the sandbox:\n%s", res.Output)
	}
	if res := run(t, sb, "echo x > /etc/runner-probe", sandbox.ExecOptions{}); res.ExitCode == 0 {
		t.Errorf("the sandbox user wrote to /etc:\n%s", res.Output)
	}

	// With the default network (none) there is no interface but loopback,
	// and every kind of probe fails at once.
	t.Run("Network", func(t *testing.T) {
		if got := output(t, sb, "ls /sys/class/net 2>/dev/null || ip -o link 2>/dev/null | cut -d: -f2"); !tg.Caps.NetworkByPolicy && (strings.Fields(got)[0] != "lo" || len(strings.Fields(got)) != 1) {
			t.Errorf("network interfaces = %q, want only lo", got)
		}
		probes := map[string]string{
			"dns":           "nslookup example.com",
			"tcp":           "nc -w 2 1.1.1.1 443 </dev/null",
			"http":          "wget -q -T 2 -O - http://example.com/",
			"metadata":      "wget -q -T 2 -O - http://169.254.169.254/latest/meta-data/",
			"docker bridge": "nc -w 2 172.17.0.1 2375 </dev/null",
		}
		for name, cmd := range probes {
			begin := time.Now()
			res := run(t, sb, cmd, sandbox.ExecOptions{Timeout: 20 * time.Second})
			if res.ExitCode == 0 {
				t.Errorf("%s: %s succeeded: %q", name, cmd, res.Output)
			}
			if took := time.Since(begin); took > 15*time.Second {
				t.Errorf("%s: %s took %s to fail", name, cmd, took)
			}
		}
	})

	// No secret of the host's environment reaches the sandbox.
	t.Run("NoHostSecrets", func(t *testing.T) {
		const canary = "sk-host-canary-9f8e7d6c5b4a"
		t.Setenv("OPENAI_API_KEY", canary)
		t.Setenv("RUNNER_GIT_TOKEN", canary)
		sb := tg.start(t, sandbox.Config{})
		got := output(t, sb, "env; tr '\\0' '\\n' </proc/1/environ; tr '\\0' '\\n' </proc/self/environ; grep -rl "+canary+" /etc /home /workspace /tmp 2>/dev/null || true")
		if strings.Contains(got, canary) {
			t.Errorf("the host's secret is visible in the sandbox:\n%s", got)
		}
		if !strings.Contains(got, "GIT_TERMINAL_PROMPT=0") {
			t.Errorf("the probe did not run: %q", got)
		}
	})
}

// The limits hold against what a runaway command does.
func testLimits(t *testing.T, tg Target) {
	// The process limit stops a fork loop short, and the timeout then
	// cleans up even though no process can be forked.
	t.Run("Pids", func(t *testing.T) {
		if tg.Caps.PidsCountsHostThreads {
			forkLoopEndsSandbox(t, tg)
			return
		}
		sb := tg.start(t, sandbox.Config{Pids: 40})
		res := run(t, sb, `sh -c 'i=0; while [ $i -lt 200 ]; do sleep 100 >/dev/null 2>&1 & i=$((i+1)); done'; exec sleep 100`,
			sandbox.ExecOptions{Timeout: 3 * time.Second})
		if !res.TimedOut {
			t.Errorf("TimedOut = false, want true; output:\n%s", res.Output)
		}
		if !tg.Caps.PidsByCluster && !regexp.MustCompile(`(?i)can't fork|resource temporarily unavailable`).MatchString(res.Stderr) {
			t.Errorf("stderr shows no failed fork:\n%s", res.Stderr)
		}
		if left := processes(t, sb, "sleep 100"); left != "" {
			t.Errorf("fork-loop sleepers survived the timeout:\n%s", left)
		}
		if res, err := sb.Exec(context.Background(), "echo alive", sandbox.ExecOptions{}); err != nil || res.Stdout != "alive\n" {
			t.Errorf("sandbox unusable after the fork loop: %+v, %v", res, err)
		}
	})

	// A memory hog is killed, and the result says so where the runtime
	// reports it; the sandbox goes on.
	t.Run("Memory", func(t *testing.T) {
		sb := tg.start(t, sandbox.Config{Memory: 64 << 20})
		hog := `x=$(head -c 300000000 /dev/zero | tr '\0' a); echo survived ${#x}`
		if tg.Caps.OOMMayEndSandbox {
			res, err := sb.Exec(context.Background(), hog, sandbox.ExecOptions{Timeout: time.Minute})
			if err != nil {
				if !strings.Contains(err.Error(), "memory") {
					t.Errorf("Exec(hog): %v; want the sandbox ended for memory, or the hog killed", err)
				}
				return // the whole sandbox ended: it failed closed
			}
			if strings.Contains(res.Stdout, "survived 300000000") {
				t.Errorf("the hog was not stopped: %+v", res)
			}
			return
		}
		res := run(t, sb, hog, sandbox.ExecOptions{Timeout: time.Minute})
		if strings.Contains(res.Stdout, "survived 300000000") || res.ExitCode == 0 && !res.OOMKilled {
			t.Errorf("the hog was not stopped: %+v", res)
		}
		if tg.Caps.OOMReported && !res.OOMKilled {
			t.Errorf("OOMKilled = false, exit %d, stdout %q; want the hog reported killed for memory", res.ExitCode, res.Stdout)
		}
		if res := run(t, sb, "echo alive", sandbox.ExecOptions{}); res.Stdout != "alive\n" {
			t.Errorf("after the hog: %+v", res)
		}
	})

	// A disk filler gets ENOSPC in the workspace and in /tmp; the root
	// file system is read-only.
	t.Run("Disk", func(t *testing.T) {
		sb := tg.start(t, sandbox.Config{Disk: 16 << 20, Memory: 512 << 20})
		for _, dir := range []string{"/workspace", "/tmp", "$HOME"} {
			res := run(t, sb, "dd if=/dev/zero of="+dir+"/fill bs=1M count=64 2>&1; rm -f "+dir+"/fill", sandbox.ExecOptions{Timeout: time.Minute})
			if !strings.Contains(res.Output, "No space left on device") {
				t.Errorf("filling %s: %q; want ENOSPC", dir, res.Output)
			}
		}
		for _, dir := range []string{"/", "/etc", "/usr"} {
			if res := run(t, sb, "echo x > "+dir+"/fill 2>&1", sandbox.ExecOptions{}); res.ExitCode == 0 {
				t.Errorf("writing to %s succeeded; want a read-only file system", dir)
			}
		}
	})
}

// forkLoopEndsSandbox: where the process limit counts the host threads of
// the runtime's kernel, a fork loop that reaches it ends the sandbox, and
// every later call says the sandbox stopped: contained, and fail closed.
func forkLoopEndsSandbox(t *testing.T, tg Target) {
	sb := tg.start(t, sandbox.Config{Pids: 128})
	output(t, sb, "echo started")
	res, err := sb.Exec(context.Background(), `i=0; while [ $i -lt 400 ]; do sleep 100 >/dev/null 2>&1 & i=$((i+1)); done; exec sleep 100`,
		sandbox.ExecOptions{Timeout: 30 * time.Second})
	if err == nil && !res.TimedOut {
		t.Fatalf("the fork loop ended by itself: %+v", res)
	}
	if err != nil && !errors.Is(err, sandbox.ErrStopped) {
		t.Errorf("Exec of the fork loop: %v, want ErrStopped or a timeout", err)
	}
	if err != nil {
		if _, err := sb.Exec(context.Background(), "true", sandbox.ExecOptions{}); !errors.Is(err, sandbox.ErrStopped) {
			t.Errorf("Exec after the sandbox ended: %v, want ErrStopped", err)
		}
	}
}
