package docker_test

import (
	"archive/tar"
	"context"
	"fmt"
	"io"
	"os"
	"runtime"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/runner-dev/runner/internal/dockertest"
	"github.com/runner-dev/runner/sandbox"
	"github.com/runner-dev/runner/sandbox/docker"
)

// channelEngine is the shared engine with the channel helper in use.
func channelEngine(t testing.TB) *docker.Engine {
	t.Helper()
	e := dockertest.Engine(t).OwnedBy(sandbox.Self())
	if err := e.UseChannel(dockertest.ChannelHelper(t)); err != nil {
		t.Fatalf("UseChannel: %v", err)
	}
	return e
}

// startChannel starts a busybox sandbox whose channel is up.
func startChannel(t *testing.T, cfg sandbox.Config) *docker.Sandbox {
	t.Helper()
	sb := startOn(t, channelEngine(t), cfg)
	if sb.ChannelPID() == 0 {
		t.Fatal("the sandbox's channel did not start")
	}
	return sb
}

// Every exec and file behaviour of the suite, through the channel (the
// plain TestConformance is the exec per command that a sandbox falls back
// to when its channel ends).
func TestConformanceChannel(t *testing.T) {
	conformance(t, channelEngine(t))
}

// The agent kills the helper while a command runs through it: the command
// returns promptly, killed, with a notice; its processes are gone; the
// sandbox goes on with an exec per command, for commands and files.
func TestChannelHelperKilledMidCommand(t *testing.T) {
	sb := startChannel(t, sandbox.Config{})
	pid := sb.ChannelPID()
	type result struct {
		res sandbox.ExecResult
		err error
	}
	inFlight := make(chan result, 1)
	go func() {
		res, err := sb.Exec(context.Background(), "echo started; exec sleep 600", sandbox.ExecOptions{Timeout: 5 * time.Minute})
		inFlight <- result{res, err}
	}()
	waitFor(t, 30*time.Second, func() bool { return sleepers(t, sb.ID(), "sleep 600") != "" })
	// What an agent's `pkill -9 -f sandbox-channel` does, from a second
	// exec of its own so as not to wait on the command it kills.
	if out, err := dockerCLI(t, "exec", "-u", "1000:1000", sb.ID(), "kill", "-9", strconv.Itoa(pid)); err != nil {
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
	waitFor(t, 30*time.Second, func() bool { return sleepers(t, sb.ID(), "sleep 600") == "" })
	if sb.ChannelPID() != 0 {
		t.Error("the sandbox still reports a live channel")
	}
	res := run(t, sb, "echo after", sandbox.ExecOptions{})
	if res.ExitCode != 0 || res.Stdout != "after\n" || res.Notice != "" {
		t.Errorf("after the fallback: %+v; want exit 0, stdout \"after\\n\", no second notice", res)
	}
	ctx := context.Background()
	if err := sb.WriteFile(ctx, "f.txt", []byte("x"), 0); err != nil {
		t.Fatalf("WriteFile after the fallback: %v", err)
	}
	if b, err := sb.ReadFile(ctx, "f.txt"); err != nil || string(b) != "x" {
		t.Errorf("ReadFile after the fallback = %q, %v", b, err)
	}
}

// Several commands flooding their output at once, and a file read meanwhile:
// the caps hold inside the sandbox, and the read is not stuck behind them.
func TestChannelFlood(t *testing.T) {
	sb := startChannel(t, sandbox.Config{})
	ctx := context.Background()
	if err := sb.WriteFile(ctx, "small.txt", []byte("small"), 0); err != nil {
		t.Fatal(err)
	}
	errs := make(chan error, 3)
	for i := range 3 {
		go func() {
			res, err := sb.Exec(ctx, fmt.Sprintf("yes flood%d | head -c 104857600; echo END%d", i, i), sandbox.ExecOptions{MaxOutput: 8192})
			switch {
			case err != nil:
				errs <- err
			case !res.Truncated || len(res.Output) > 8192+100 || !strings.HasSuffix(res.Output, fmt.Sprintf("END%d\n", i)):
				errs <- fmt.Errorf("flood %d: truncated %v, %d bytes kept, ends %q", i, res.Truncated, len(res.Output), res.Output[max(0, len(res.Output)-20):])
			default:
				errs <- nil
			}
		}()
	}
	if b, err := sb.ReadFile(ctx, "small.txt"); err != nil || string(b) != "small" {
		t.Errorf("ReadFile during the flood = %q, %v", b, err)
	}
	for range 3 {
		if err := <-errs; err != nil {
			t.Error(err)
		}
	}
	if sb.ChannelPID() == 0 {
		t.Error("the channel ended during the flood")
	}
}

// 1,000 commands in a row (300 unless RUNNER_CHANNEL_SOAK=1: a thousand
// take about two minutes) each get their reply, and leave nothing behind:
// no goroutine or descriptor on the host, no process in the sandbox.
func TestChannelThousandCommands(t *testing.T) {
	n := 300
	if os.Getenv("RUNNER_CHANNEL_SOAK") == "1" {
		n = 1000
	}
	sb := startChannel(t, sandbox.Config{})
	procs := func() int {
		out, err := dockerCLI(t, "exec", sb.ID(), "sh", "-c", "ls -d /proc/[0-9]* | wc -l")
		if err != nil {
			t.Fatalf("count processes: %v: %s", err, out)
		}
		n, _ := strconv.Atoi(strings.TrimSpace(out))
		return n
	}
	fds := func() int {
		ents, err := os.ReadDir("/proc/self/fd")
		if err != nil {
			t.Fatal(err)
		}
		return len(ents)
	}
	run(t, sb, "true", sandbox.ExecOptions{}) // the first command's lazily made state
	g0, f0, p0 := runtime.NumGoroutine(), fds(), procs()
	for i := range n {
		res := run(t, sb, "echo $((1+"+strconv.Itoa(i)+"))", sandbox.ExecOptions{Timeout: 30 * time.Second})
		if res.ExitCode != 0 || res.Stdout != strconv.Itoa(i+1)+"\n" || res.TimedOut || res.Duration > 15*time.Second {
			t.Fatalf("command %d: %+v", i, res)
		}
	}
	// Goroutines of the last command may take a moment to end.
	waitFor(t, 10*time.Second, func() bool { return runtime.NumGoroutine() <= g0+2 })
	if f := fds(); f > f0+2 {
		t.Errorf("descriptors on the host: %d before, %d after %d commands", f0, f, n)
	}
	if p := procs(); p > p0 {
		t.Errorf("processes in the sandbox: %d before, %d after %d commands", p0, p, n)
	}
	if sb.ChannelPID() == 0 {
		t.Error("the channel ended")
	}
}

// The agent attacks the helper: it cannot write into the helper's stdin or
// stdout through /proc (the helper is not dumpable, so its descriptors are
// root's to open), nor replace or add to the helper's binary, whether the
// binary is the host's file mounted read-only (an engine on this machine)
// or a copy in a volume of root's (an engine elsewhere); the channel stays
// up and keeps answering truthfully.
func TestChannelAgentAttacksHelper(t *testing.T) {
	for _, bound := range []bool{true, false} {
		t.Run(fmt.Sprintf("bound=%v", bound), func(t *testing.T) {
			e := channelEngine(t)
			if !bound {
				e.CopyChannelHelper()
			}
			sb := startOn(t, e, sandbox.Config{})
			if sb.ChannelPID() == 0 {
				t.Fatal("the sandbox's channel did not start")
			}
			if sb.HelperBound() != bound {
				t.Fatalf("helper bound: %v, want %v", sb.HelperBound(), bound)
			}
			attackHelper(t, sb)
			want := "0:0 555\n0:0 755" // the copy, in root's volume
			if bound {
				// The host's file: root's, as the test built it; the mount
				// is read-only whatever its mode.
				want = "0:0 755\n0:0 755"
				mounts := output(t, sb, "grep ' /.runner/sandbox-channel ' /proc/self/mountinfo")
				if f := strings.Fields(mounts); len(f) < 6 || !strings.HasPrefix(f[5], "ro") {
					t.Errorf("the helper's mount is not read-only: %q", mounts)
				}
			}
			out, err := dockerCLI(t, "exec", sb.ID(), "stat", "-c", "%u:%g %a", "/.runner/sandbox-channel", "/.runner")
			if out = strings.ReplaceAll(out, "\r", ""); err != nil || out != want {
				t.Errorf("the helper's file and directory: %q, %v; want %q", out, err, want)
			}
		})
	}
}

// attackHelper runs the attacks of TestChannelAgentAttacksHelper.
func attackHelper(t *testing.T, sb *docker.Sandbox) {
	t.Helper()
	pid := strconv.Itoa(sb.ChannelPID())
	attacks := []string{
		"printf 'garbage\\377\\377\\377\\377' > /proc/" + pid + "/fd/0",
		"printf 'garbage\\377\\377\\377\\377' > /proc/" + pid + "/fd/1",
		"cat /proc/" + pid + "/environ",
		"cp /bin/busybox /.runner/sandbox-channel",
		"rm -f /.runner/sandbox-channel",
		"mv /.runner/sandbox-channel /.runner/x",
		"chmod 0777 /.runner/sandbox-channel",
		"touch /.runner/x",
		"echo x >> /.runner/sandbox-channel",
		"umount /.runner/sandbox-channel",
	}
	for _, a := range attacks {
		res := run(t, sb, a, sandbox.ExecOptions{})
		if res.ExitCode == 0 {
			t.Errorf("%s: succeeded, want it refused (output %q)", a, res.Output)
		}
	}
	if res := run(t, sb, "echo still", sandbox.ExecOptions{}); res.Stdout != "still\n" || res.Notice != "" {
		t.Errorf("after the attacks: %+v", res)
	}
	if sb.ChannelPID() == 0 {
		t.Error("the channel ended")
	}
}

// The channel streams a tar of the live workspace: every entry, symlinks
// as symlinks (never followed out of the workspace), contents whole.
func TestChannelTar(t *testing.T) {
	sb := startChannel(t, sandbox.Config{})
	output(t, sb, "mkdir -p a/b && printf one > a/b/f && ln -s /etc/passwd out && head -c 3000000 /dev/zero > big")
	ctx := context.Background()
	rc, err := sb.ChannelTar(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer rc.Close()
	got := map[string]string{}
	tr := tar.NewReader(rc)
	for {
		h, err := tr.Next()
		if err == io.EOF {
			break
		}
		if err != nil {
			t.Fatalf("read the tar: %v", err)
		}
		body, _ := io.ReadAll(tr)
		switch h.Typeflag {
		case tar.TypeSymlink:
			got[h.Name] = "-> " + h.Linkname
		case tar.TypeReg:
			got[h.Name] = strconv.Itoa(len(body)) + ":" + string(body[:min(len(body), 3)])
		default:
			got[h.Name] = "dir"
		}
	}
	want := map[string]string{"./": "dir", "./a/": "dir", "./a/b/": "dir", "./a/b/f": "3:one", "./out": "-> /etc/passwd", "./big": "3000000:\x00\x00\x00"}
	for k, v := range want {
		if got[k] != v {
			t.Errorf("entry %s = %q, want %q", k, got[k], v)
		}
	}
	if len(got) != len(want) {
		t.Errorf("entries %v, want %v", got, want)
	}
}

// A fork loop that uses up the process limit while other commands and file
// operations go through the channel: the helper, which needs a thread for
// each command it waits on, keeps serving (it reserved its threads at its
// start), the loop times out, its processes are gone, and no fallback was
// needed.
func TestChannelSurvivesForkLoop(t *testing.T) {
	sb := startChannel(t, sandbox.Config{Pids: 40})
	pid := sb.ChannelPID()
	// The threads it holds from its start, read as root (the helper is
	// not dumpable).
	out, err := dockerCLI(t, "exec", sb.ID(), "grep", "^Threads:", "/proc/"+strconv.Itoa(pid)+"/status")
	if err != nil {
		t.Fatalf("read the helper's threads: %v: %s", err, out)
	}
	if n, _ := strconv.Atoi(strings.TrimSpace(strings.TrimPrefix(out, "Threads:"))); n < 12 {
		t.Errorf("the helper holds %d threads from its start, want at least 12 (%q)", n, out)
	}
	ctx := context.Background()
	loop := make(chan sandbox.ExecResult, 1)
	go func() {
		res, err := sb.Exec(ctx, `: >forking; sh -c 'i=0; while [ $i -lt 200 ]; do sleep 100 >/dev/null 2>&1 & i=$((i+1)); done'; exec sleep 100`,
			sandbox.ExecOptions{Timeout: 6 * time.Second})
		if err != nil {
			t.Errorf("the fork loop: %v", err)
		}
		loop <- res
	}()
	// Seen through the channel, which needs no fork (an exec of the
	// engine's may find no process left to start).
	waitFor(t, 30*time.Second, func() bool { _, err := sb.ReadFile(ctx, "forking"); return err == nil })
	// Meanwhile, commands (whose forks may fail: the limit is used up)
	// and file operations, several at once.
	done := make(chan struct{})
	for i := range 6 {
		go func() {
			defer func() { done <- struct{}{} }()
			if i%2 == 0 {
				sb.Exec(ctx, "sleep 1; echo ok", sandbox.ExecOptions{Timeout: 10 * time.Second})
				return
			}
			sb.ReadFile(ctx, "missing.txt")
		}()
	}
	for range 6 {
		<-done
	}
	res := <-loop
	if !res.TimedOut || res.Notice != "" {
		t.Errorf("the fork loop's result: exit %d, timed out %v, notice %q; want timed out, no notice", res.ExitCode, res.TimedOut, res.Notice)
	}
	waitFor(t, 30*time.Second, func() bool { return sleepers(t, sb.ID(), "sleep 100") == "" })
	if got := sb.ChannelPID(); got != pid {
		t.Fatalf("the helper did not survive the fork loop: channel pid %d, was %d", got, pid)
	}
	if r := run(t, sb, "echo after", sandbox.ExecOptions{}); r.Stdout != "after\n" || r.Notice != "" {
		t.Errorf("after the fork loop: %+v", r)
	}
}
