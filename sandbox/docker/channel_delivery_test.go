package docker_test

import (
	"context"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"

	"golang.org/x/sys/unix"

	"github.com/runner-dev/runner/internal/dockertest"
	"github.com/runner-dev/runner/sandbox"
)

// An engine that cannot see the helper's file (one reached through a
// socket from another machine or container) refuses to mount it: the
// sandbox gets a copy instead, its channel comes up, and the engine copies
// from then on. Here the file exists only in a mount namespace of the
// test's own, which the engine does not share.
func TestChannelHelperNotOnTheEngineIsCopied(t *testing.T) {
	if os.Getuid() != 0 {
		t.Skip("needs root, for a mount namespace of the test's own")
	}
	helper := dockertest.ChannelHelper(t)
	body, err := os.ReadFile(helper)
	if err != nil {
		t.Fatal(err)
	}
	image := dockertest.Busybox(t)
	e := dockertest.Engine(t).OwnedBy(sandbox.Self())
	dir := t.TempDir()
	done := make(chan struct{})
	go func() {
		defer close(done)
		// Never unlocked: the thread ends with this goroutine, and its
		// mount namespace with it.
		runtime.LockOSThread()
		if err := unix.Unshare(unix.CLONE_NEWNS); err != nil {
			t.Errorf("unshare: %v", err)
			return
		}
		if err := unix.Mount("", "/", "", unix.MS_REC|unix.MS_PRIVATE, ""); err != nil {
			t.Errorf("make the mounts private: %v", err)
			return
		}
		if err := unix.Mount("tmpfs", dir, "tmpfs", 0, "size=64m"); err != nil {
			t.Errorf("mount: %v", err)
			return
		}
		bin := filepath.Join(dir, "sandbox-channel")
		if err := os.WriteFile(bin, body, 0o755); err != nil {
			t.Error(err)
			return
		}
		if err := e.UseChannel(bin); err != nil {
			t.Errorf("UseChannel: %v", err)
			return
		}
		if !e.BindsChannelHelper() {
			t.Error("an engine on a unix socket does not try to mount the helper")
			return
		}
		ctx := context.Background()
		sb, err := e.StartContainer(ctx, sandbox.Config{Image: image, RunID: dockertest.RunID, TaskID: t.Name()})
		if err != nil {
			t.Errorf("Start: %v", err)
			return
		}
		defer sb.Close(ctx)
		if sb.HelperBound() || sb.ChannelPID() == 0 {
			t.Errorf("helper bound %v, channel helper pid %d: want a copy, and the channel up", sb.HelperBound(), sb.ChannelPID())
		}
		if e.BindsChannelHelper() {
			t.Error("the engine goes on trying to mount the helper")
		}
		res, err := sb.Exec(ctx, "echo up", sandbox.ExecOptions{})
		if err != nil || res.Stdout != "up\n" || res.Notice != "" {
			t.Errorf("a command: %+v, %v", res, err)
		}
	}()
	<-done
	if _, err := os.Stat(filepath.Join(dir, "sandbox-channel")); err == nil {
		t.Error("the helper's file was visible outside the test's mount namespace: the test proves nothing")
	}
}

// A helper file the engine mounts but the sandbox user cannot run (here
// root's, mode 0700) leaves that sandbox on an exec per command, with a
// notice, and turns the engine to copies: the next sandbox's channel is up.
func TestChannelMountedHelperThatCannotRunIsCopied(t *testing.T) {
	body, err := os.ReadFile(dockertest.ChannelHelper(t))
	if err != nil {
		t.Fatal(err)
	}
	bin := filepath.Join(t.TempDir(), "sandbox-channel")
	if err := os.WriteFile(bin, body, 0o700); err != nil {
		t.Fatal(err)
	}
	e := dockertest.Engine(t).OwnedBy(sandbox.Self())
	if err := e.UseChannel(bin); err != nil {
		t.Fatal(err)
	}
	first := startOn(t, e, sandbox.Config{})
	if !first.HelperBound() || first.ChannelPID() != 0 {
		t.Fatalf("first sandbox: helper bound %v, channel pid %d; want the mount tried and no channel", first.HelperBound(), first.ChannelPID())
	}
	if res := run(t, first, "echo fallback", sandbox.ExecOptions{}); res.Stdout != "fallback\n" || !strings.Contains(res.Notice, "did not start") {
		t.Errorf("a command in the first sandbox: %+v", res)
	}
	if e.BindsChannelHelper() {
		t.Fatal("the engine goes on mounting a helper that does not start")
	}
	second := startOn(t, e, sandbox.Config{})
	if second.HelperBound() || second.ChannelPID() == 0 {
		t.Errorf("second sandbox: helper bound %v, channel pid %d; want a copy and the channel up", second.HelperBound(), second.ChannelPID())
	}
}
