package sandboxtest

import (
	"context"
	"errors"
	"os"
	"os/exec"
	"testing"
	"time"

	"github.com/runner-dev/runner/sandbox"
)

// Cleanup removes the sandboxes whose owner process is dead and keeps
// those of a live one; a dry run removes nothing.
func testCleanup(t *testing.T, tg Target) {
	if tg.OwnedBy == nil {
		t.Fatal("Caps.Leftovers needs Target.OwnedBy")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	exited := exec.CommandContext(ctx, "true")
	if err := exited.Run(); err != nil {
		t.Fatal(err)
	}
	host, _ := os.Hostname()
	dead := sandbox.Owner{Host: host, PID: exited.Process.Pid}
	orphan := tg.startOn(t, tg.OwnedBy(dead), sandbox.Config{TaskID: "conformance-dead-owner"})
	live := tg.start(t, sandbox.Config{TaskID: "conformance-live-owner"})

	find := func(ls []sandbox.Leftover, task string) *sandbox.Leftover {
		for i := range ls {
			if ls[i].Task == task && ls[i].Run == tg.RunID {
				return &ls[i]
			}
		}
		return nil
	}
	for _, dryRun := range []bool{true, false} {
		rep, err := tg.Backend.Cleanup(ctx, dryRun)
		if err != nil {
			t.Fatalf("Cleanup(dry run %v): %v", dryRun, err)
		}
		if l := find(rep.Removed, "conformance-dead-owner"); l == nil || l.Why != "owner dead" {
			t.Errorf("Cleanup(dry run %v) removed %+v; want the dead owner's sandbox, for \"owner dead\"", dryRun, rep.Removed)
		}
		if l := find(rep.Removed, "conformance-live-owner"); l != nil {
			t.Errorf("Cleanup(dry run %v) removed the live owner's sandbox: %+v", dryRun, l)
		}
		if dryRun {
			if got := output(t, orphan, "echo still here"); got != "still here" {
				t.Errorf("after a dry run the dead owner's sandbox answers %q", got)
			}
		}
	}
	if _, err := orphan.Exec(ctx, "true", sandbox.ExecOptions{}); !errors.Is(err, sandbox.ErrStopped) {
		t.Errorf("Exec in the removed sandbox: %v, want ErrStopped", err)
	}
	if got := output(t, live, "echo alive"); got != "alive" {
		t.Errorf("the live owner's sandbox answers %q after Cleanup", got)
	}
}
