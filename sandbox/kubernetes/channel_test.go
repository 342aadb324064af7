package kubernetes_test

import (
	"context"
	"io"
	"os/exec"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/runner-dev/runner/internal/dockertest"
	"github.com/runner-dev/runner/internal/k8stest"
	"github.com/runner-dev/runner/sandbox"
	"github.com/runner-dev/runner/sandbox/kubernetes"
	"github.com/runner-dev/runner/sandbox/sandboxtest"
)

var (
	channelOnce    sync.Once
	channelBackend *kubernetes.Backend
	channelErr     error
)

// channelCluster is a backend on the test cluster whose sandboxes serve
// their commands through the channel.
func channelCluster(t testing.TB) *kubernetes.Backend {
	t.Helper()
	opt := k8stest.Options(t)
	opt.Channel = true
	channelOnce.Do(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		channelBackend, channelErr = kubernetes.Connect(ctx, opt)
	})
	if channelErr != nil {
		t.Fatalf("connect to the test cluster: %v", channelErr)
	}
	return channelBackend
}

// startChannel starts a sandbox whose channel is up.
func startChannel(t *testing.T, cfg sandbox.Config) *kubernetes.Sandbox {
	t.Helper()
	sb := start(t, channelCluster(t), cfg)
	if sb.ChannelPID() == 0 {
		t.Fatal("the sandbox's channel did not start")
	}
	return sb
}

// Every exec and file behaviour of the suite, through the channel (the
// plain TestConformance is the exec per command that a sandbox falls back
// to when its channel ends).
func TestConformanceChannel(t *testing.T) {
	b := channelCluster(t)
	sandboxtest.Run(t, sandboxtest.Target{
		Backend: b, Image: k8stest.Image(t), RunID: runID,
		OwnedBy: func(o sandbox.Owner) sandbox.Backend { return b.OwnedBy(o) },
		Swapper: dockertest.Swapper(t),
		Caps: sandboxtest.Caps{
			Processes: true, Isolation: true, Leftovers: true,
			NoNewPrivsShown: true,
			OOMReported:     true,
			NetworkByPolicy: true,
			PidsByCluster:   true,
		},
	})
}

// podExec runs argv in sb's pod with kubectl, as the sandbox user, beside
// the channel: what an agent's second process would do.
func podExec(t *testing.T, sb *kubernetes.Sandbox, argv ...string) (string, error) {
	t.Helper()
	args := append([]string{"--kubeconfig", k8stest.Kubeconfig(t), "--namespace", k8stest.Namespace(), "exec", sb.Name(), "-c", "sandbox", "--"}, argv...)
	out, err := exec.CommandContext(t.Context(), "kubectl", args...).CombinedOutput()
	return string(out), err
}

// sleepers lists the processes of sb whose command line contains what.
func sleepers(t *testing.T, sb *kubernetes.Sandbox, what string) string {
	t.Helper()
	out, err := podExec(t, sb, "sh", "-c", `for d in /proc/[0-9]*; do c=$(tr '\0' ' ' <"$d/cmdline" 2>/dev/null); case "$c" in *"`+what+`"*) echo "${d#/proc/} $c";; esac; done; true`)
	if err != nil {
		t.Fatalf("list processes: %v: %s", err, out)
	}
	var found []string
	for _, l := range strings.Split(out, "\n") {
		// The lister's own sh holds the pattern too.
		if l != "" && !strings.Contains(l, "/proc/") {
			found = append(found, l)
		}
	}
	return strings.Join(found, "\n")
}

func waitFor(t *testing.T, d time.Duration, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(d)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("condition not met within %s", d)
		}
		time.Sleep(200 * time.Millisecond)
	}
}

// The agent kills the helper while a command runs through it: the command
// returns promptly, killed (not run a second time), with a notice; its
// processes are gone; the sandbox goes on with an exec per command, for
// commands and files.
func TestChannelHelperKilledMidCommand(t *testing.T) {
	sb := startChannel(t, sandbox.Config{})
	pid := sb.ChannelPID()
	type result struct {
		res sandbox.ExecResult
		err error
	}
	inFlight := make(chan result, 1)
	go func() {
		res, err := sb.Exec(context.Background(), "echo run >> /tmp/runs; exec sleep 600", sandbox.ExecOptions{Timeout: 5 * time.Minute})
		inFlight <- result{res, err}
	}()
	waitFor(t, 60*time.Second, func() bool { return sleepers(t, sb, "sleep 600") != "" })
	// What an agent's `pkill -9 -f sandbox-channel` does, from a second
	// process of its own.
	if out, err := podExec(t, sb, "kill", "-9", strconv.Itoa(pid)); err != nil {
		t.Fatalf("kill the helper as the sandbox user: %v: %s", err, out)
	}
	var got result
	select {
	case got = <-inFlight:
	case <-time.After(60 * time.Second):
		t.Fatal("the command in flight did not return within 60s of the helper's death")
	}
	if got.err != nil {
		t.Fatalf("in-flight Exec: %v", got.err)
	}
	if got.res.ExitCode != 137 || !strings.Contains(got.res.Notice, "channel ended") {
		t.Errorf("in-flight result = exit %d, notice %q; want 137 and a notice of the fallback", got.res.ExitCode, got.res.Notice)
	}
	waitFor(t, 30*time.Second, func() bool { return sleepers(t, sb, "sleep 600") == "" })
	if sb.ChannelPID() != 0 {
		t.Error("the sandbox still reports a live channel")
	}
	res := run(t, sb, "echo after; wc -l < /tmp/runs", sandbox.ExecOptions{})
	if res.ExitCode != 0 || res.Stdout != "after\n1\n" || res.Notice != "" {
		t.Errorf("after the fallback: %+v; want exit 0, stdout \"after\\n1\\n\" (the killed command ran once), no second notice", res)
	}
	ctx := context.Background()
	if err := sb.WriteFile(ctx, "f.txt", []byte("x"), 0); err != nil {
		t.Fatalf("WriteFile after the fallback: %v", err)
	}
	if b, err := sb.ReadFile(ctx, "f.txt"); err != nil || string(b) != "x" {
		t.Errorf("ReadFile after the fallback = %q, %v", b, err)
	}
}

// The helper's file belongs to the sandbox user, so the agent can replace
// it; the host never starts it again. The agent swaps in its own program
// and kills the helper: the sandbox falls back to an exec per command, and
// neither the commands, the file operations nor the snapshot after it run
// the replacement.
func TestChannelReplacedHelperNeverRuns(t *testing.T) {
	sb := startChannel(t, sandbox.Config{Network: "none"})
	fake := "#!/bin/sh\necho \"$@\" >> /tmp/fake-helper-ran\nexit 0\n"
	res := run(t, sb, "rm -f /.runner/h && printf '%s' '"+fake+"' > /.runner/h && chmod 0755 /.runner/h && cat /.runner/h", sandbox.ExecOptions{})
	if res.ExitCode != 0 || res.Stdout != fake {
		t.Fatalf("the agent could not replace the helper's file: %+v", res)
	}
	// The agent kills the helper from the command it runs through it.
	res = run(t, sb, "kill -9 "+strconv.Itoa(sb.ChannelPID())+"; sleep 60", sandbox.ExecOptions{})
	if res.ExitCode != 137 || !strings.Contains(res.Notice, "channel ended") {
		t.Errorf("the command that killed the helper: exit %d, notice %q; want 137 and a notice of the fallback", res.ExitCode, res.Notice)
	}
	if sb.ChannelPID() != 0 {
		t.Error("the sandbox still reports a live channel")
	}
	ctx := context.Background()
	if res := run(t, sb, "echo after", sandbox.ExecOptions{}); res.Stdout != "after\n" {
		t.Errorf("Exec after the fallback: %+v", res)
	}
	if err := sb.WriteFile(ctx, "f.txt", []byte("x"), 0); err != nil {
		t.Fatalf("WriteFile after the fallback: %v", err)
	}
	if b, err := sb.ReadFile(ctx, "f.txt"); err != nil || string(b) != "x" {
		t.Errorf("ReadFile after the fallback = %q, %v", b, err)
	}
	if _, err := sb.ListFiles(ctx, ".", true); err != nil {
		t.Errorf("ListFiles after the fallback: %v", err)
	}
	rc, err := sb.Snapshot(ctx)
	if err != nil {
		t.Fatalf("Snapshot after the fallback: %v", err)
	}
	if _, err := io.Copy(io.Discard, rc); err != nil {
		t.Errorf("read the snapshot: %v", err)
	}
	rc.Close()
	out, err := podExec(t, sb, "sh", "-c", "cat /.runner/h; cat /tmp/fake-helper-ran 2>/dev/null; true")
	if err != nil {
		t.Fatalf("read the pod: %v: %s", err, out)
	}
	if out != fake {
		t.Errorf("the helper's file and the replacement's trace = %q; want the replacement untouched and never run", out)
	}
}
