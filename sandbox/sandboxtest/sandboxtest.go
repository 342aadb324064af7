// Package sandboxtest is the conformance suite every sandbox.Backend
// passes: the same tests, run against each backend and runtime (the Docker
// backend under runc and under runsc, the in-memory fake), so that code
// driving a sandbox can rely on the contract of package sandbox whatever
// runs it. A backend declares in Caps what it emulates; the parts it does
// not are skipped for it, and only for it.
package sandboxtest

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/runner-dev/runner/sandbox"
)

// Target is one backend under test.
type Target struct {
	// Backend starts the sandboxes. The suite closes every sandbox it
	// starts, not the backend.
	Backend sandbox.Backend
	// Image is the image of every sandbox: it has a POSIX shell with the
	// busybox tools (ps, nc, wget, dd...), when Caps.Processes is set.
	Image string
	// Runtime is Config.Runtime of every sandbox; empty is the default.
	Runtime string
	// RunID labels every sandbox, so that the harness finds leftovers.
	RunID string
	// OwnedBy returns a backend whose sandboxes name o as their owner
	// (for the cleanup of a dead run's sandboxes); nil when Caps.Leftovers
	// is off.
	OwnedBy func(o sandbox.Owner) sandbox.Backend
	// Symlink makes the symlink name → target in the workspace; nil does it
	// with `ln -s` through Exec.
	Symlink func(ctx context.Context, sb sandbox.Sandbox, target, name string) error
	// Swapper is a static Linux program for the race of the file tools:
	// `swapper A B LOG` exchanges the names A and B until SIGTERM, writing
	// "started" to LOG first and "swaps=N" last. Required with
	// Caps.Processes.
	Swapper []byte
	Caps    Caps
}

// Caps says which parts of the contract a backend fulfils beyond the file
// tools and the snapshot, which every backend fulfils.
type Caps struct {
	// Processes: Exec runs real processes under a POSIX shell: timeouts,
	// cancellation, detached children, output caps and the file-tool race.
	Processes bool
	// Isolation: the hardening can be probed from inside (uid, capabilities,
	// network, open files) and the limits hold (processes, memory).
	Isolation bool
	// NoNewPrivsShown: /proc/self/status has a NoNewPrivs line. gVisor's
	// /proc does not show one, though it applies no_new_privs.
	NoNewPrivsShown bool
	// OOMReported: a command killed for memory sets ExecResult.OOMKilled.
	OOMReported bool
	// OOMMayEndSandbox: a memory hog may end the whole sandbox (gVisor,
	// sometimes) rather than only its command: the sandbox fails closed,
	// and Exec says the sandbox was killed for memory.
	OOMMayEndSandbox bool
	// PidsCountsHostThreads: Config.Pids caps the host threads of the
	// runtime's own kernel rather than the sandbox's processes (gVisor): a
	// fork loop that reaches it ends the whole sandbox (fail closed)
	// instead of seeing its forks fail, and a low limit keeps the sandbox
	// from starting at all.
	PidsCountsHostThreads bool
	// Leftovers: Cleanup removes the sandboxes of a dead owner and keeps a
	// live one's.
	Leftovers bool
	// NetworkByPolicy: network "none" is a policy around the sandbox's
	// network interface (Kubernetes: a deny-all egress NetworkPolicy)
	// rather than no interface at all: the sandbox has one besides lo, and
	// every probe must still fail.
	NetworkByPolicy bool
	// PidsByCluster: Config.Pids is not applied to each sandbox; the
	// cluster caps processes (Kubernetes: the kubelet's podPidsLimit). A
	// fork loop is then not seen to fail a fork, but its timeout still
	// kills every process it started.
	PidsByCluster bool
}

// Run runs the suite against tg, as subtests of t.
func Run(t *testing.T, tg Target) {
	t.Run("Files", func(t *testing.T) { testFiles(t, tg) })
	t.Run("Snapshot", func(t *testing.T) { testSnapshot(t, tg) })
	t.Run("SnapshotOfUnreadable", func(t *testing.T) {
		need(t, tg.Caps.Processes, "real processes")
		testSnapshotUnreadable(t, tg)
	})
	t.Run("Checkpoint", func(t *testing.T) {
		need(t, tg.Caps.Processes, "real processes")
		testCheckpoint(t, tg)
	})
	t.Run("Lifecycle", func(t *testing.T) { testLifecycle(t, tg) })
	t.Run("Exec", func(t *testing.T) {
		need(t, tg.Caps.Processes, "real processes")
		testExec(t, tg)
	})
	t.Run("Hardening", func(t *testing.T) {
		need(t, tg.Caps.Isolation, "isolation")
		testHardening(t, tg)
	})
	t.Run("Limits", func(t *testing.T) {
		need(t, tg.Caps.Isolation, "isolation")
		testLimits(t, tg)
	})
	t.Run("Cleanup", func(t *testing.T) {
		need(t, tg.Caps.Leftovers, "sandboxes that outlive their owner")
		testCleanup(t, tg)
	})
	t.Run("FileRace", func(t *testing.T) {
		need(t, tg.Caps.Processes, "real processes")
		testFileRace(t, tg)
	})
}

// need skips a part the backend does not claim.
func need(t *testing.T, ok bool, what string) {
	t.Helper()
	if !ok {
		t.Skipf("the backend does not emulate %s", what)
	}
}

// start starts a sandbox of tg from cfg, closed at the end of the test.
func (tg Target) start(t testing.TB, cfg sandbox.Config) sandbox.Sandbox {
	t.Helper()
	return tg.startOn(t, tg.Backend, cfg)
}

func (tg Target) startOn(t testing.TB, b sandbox.Backend, cfg sandbox.Config) sandbox.Sandbox {
	t.Helper()
	if cfg.Image == "" {
		cfg.Image = tg.Image
	}
	if cfg.Runtime == "" {
		cfg.Runtime = tg.Runtime
	}
	if cfg.RunID == "" {
		cfg.RunID = tg.RunID
	}
	if cfg.TaskID == "" {
		cfg.TaskID = taskID(t.Name())
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	sb, err := b.Start(ctx, cfg)
	if err != nil {
		t.Fatalf("Start: %v", err)
	}
	t.Cleanup(func() {
		if err := sb.Close(context.Background()); err != nil {
			t.Errorf("Close: %v", err)
		}
	})
	return sb
}

// taskID makes a test name a task id.
func taskID(name string) string {
	r := strings.NewReplacer("/", ".", " ", "_", "=", "-")
	name = r.Replace(name)
	if len(name) > 60 {
		name = name[len(name)-60:]
	}
	return name
}

// symlink makes name → target in sb's workspace.
func (tg Target) symlink(t *testing.T, sb sandbox.Sandbox, target, name string) {
	t.Helper()
	ctx := context.Background()
	if tg.Symlink != nil {
		if err := tg.Symlink(ctx, sb, target, name); err != nil {
			t.Fatalf("symlink %s → %s: %v", name, target, err)
		}
		return
	}
	output(t, sb, fmt.Sprintf("ln -s '%s' '%s'", target, name))
}

// run runs cmd and fails the test on an infrastructure error.
func run(t testing.TB, sb sandbox.Sandbox, cmd string, opt sandbox.ExecOptions) sandbox.ExecResult {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	res, err := sb.Exec(ctx, cmd, opt)
	if err != nil {
		t.Fatalf("Exec(%q): %v", cmd, err)
	}
	return res
}

// output runs cmd, requires exit code 0 and returns stdout, trimmed.
func output(t testing.TB, sb sandbox.Sandbox, cmd string) string {
	t.Helper()
	res := run(t, sb, cmd, sandbox.ExecOptions{})
	if res.ExitCode != 0 {
		t.Fatalf("Exec(%q): exit code %d, output:\n%s", cmd, res.ExitCode, res.Output)
	}
	return strings.TrimSpace(res.Stdout)
}

// processes lists the command lines of the sandbox's processes that start
// with prefix, read from /proc from inside (the image need not have ps).
func processes(t testing.TB, sb sandbox.Sandbox, prefix string) string {
	t.Helper()
	out := output(t, sb, `for f in /proc/[0-9]*/cmdline; do tr '\0' ' ' <"$f" 2>/dev/null; echo; done`)
	var left []string
	for _, line := range strings.Split(out, "\n") {
		if strings.HasPrefix(line, prefix) {
			left = append(left, line)
		}
	}
	return strings.Join(left, "\n")
}

// waitFor polls cond until it holds, or fails the test after limit.
func waitFor(t testing.TB, limit time.Duration, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(limit)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("condition not met within %s", limit)
		}
		time.Sleep(50 * time.Millisecond)
	}
}
