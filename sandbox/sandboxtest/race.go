package sandboxtest

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"strings"
	"testing"
	"time"

	"github.com/runner-dev/runner/sandbox"
)

// While a process of the sandbox swaps a directory of the workspace with a
// symlink to a directory outside it, every few tens of microseconds,
// ReadFile and WriteFile through that directory never return a byte from
// outside the workspace and never write outside it. The target is a
// directory of the sandbox user's outside the workspace, which the user
// may read and write: only the file tools' own checks stand in the way.
func testFileRace(t *testing.T, tg Target) {
	if len(tg.Swapper) == 0 {
		t.Fatal("Caps.Processes needs Target.Swapper")
	}
	// At least minRounds rounds, then on until both outcomes were seen
	// (a fast channel can finish its rounds between two swaps of a slow
	// swapper: gVisor's renames in four steps), within raceWindow.
	const minRounds, raceWindow = 50, 30 * time.Second
	ctx := context.Background()
	sb := tg.start(t, sandbox.Config{})
	const outside = "/home/sandbox/out"
	output(t, sb, "mkdir -p "+outside+" && echo outside > "+outside+"/f")
	before := output(t, sb, "cat "+outside+"/f; ls -a "+outside)
	output(t, sb, "rm -rf d link d.swap && mkdir d && echo inside > d/f && ln -s "+outside+" link")
	if err := sb.WriteFile(ctx, "swapper", tg.Swapper, 0o755); err != nil {
		t.Fatalf("copy the swapper in: %v", err)
	}
	output(t, sb, "rm -f /tmp/swapper.log && ./swapper d link /tmp/swapper.log >/dev/null 2>&1 & echo $! > /tmp/swapper.pid")
	waitInside(t, sb, "grep -q started /tmp/swapper.log")

	// missing counts the moments when the name was absent or not yet a
	// directory: a swapper without RENAME_EXCHANGE (gVisor has none)
	// renames in four steps, and WriteFile may create d in between.
	var ok, refused, missing, other int
	var leaks, notes []string
	until := time.Now().Add(raceWindow)
	for i := 0; i < minRounds || (ok == 0 || refused == 0) && time.Now().Before(until); i++ {
		got, err := sb.ReadFile(ctx, "d/f")
		switch {
		case err == nil && (string(got) == "inside\n" || strings.HasPrefix(string(got), "written-")):
			ok++
		case err == nil:
			leaks = append(leaks, fmt.Sprintf("read %d returned %q", i, got))
		case refusal(err):
			refused++
		case errors.Is(err, sandbox.ErrNotFound):
			missing++
		default:
			other++
			notes = append(notes, err.Error())
		}
		if strings.Contains(fmt.Sprint(err), "outside\n") {
			leaks = append(leaks, fmt.Sprintf("read %d error shows the content: %v", i, err))
		}
		err = sb.WriteFile(ctx, "d/f", []byte(fmt.Sprintf("written-%d\n", i)), 0o644)
		switch {
		case err == nil:
			ok++
		case refusal(err):
			refused++
		case errors.Is(err, sandbox.ErrNotFound) || errors.Is(err, sandbox.ErrNotDir):
			missing++
		default:
			other++
			notes = append(notes, err.Error())
		}
		if len(leaks) > 0 {
			break
		}
	}
	output(t, sb, "kill $(cat /tmp/swapper.pid)")
	waitInside(t, sb, "grep -q swaps= /tmp/swapper.log")
	swaps := output(t, sb, "grep swaps= /tmp/swapper.log")
	t.Logf("%s; %d operations inside, %d refused, %d found no file, %d other errors", swaps, ok, refused, missing, other)
	if missing > 0 && !strings.Contains(swaps, "exchange=0") {
		t.Errorf("%d operations found no file though the names were exchanged atomically", missing)
	}
	if after := output(t, sb, "cat "+outside+"/f; ls -a "+outside); after != before {
		leaks = append(leaks, fmt.Sprintf("%s now holds %q, want %q", outside, after, before))
	}
	if len(leaks) > 0 {
		t.Fatalf("the file tools crossed the workspace:\n%s", strings.Join(leaks, "\n"))
	}
	if ok == 0 || refused == 0 {
		t.Errorf("%d operations succeeded and %d were refused: the swapper did not race them", ok, refused)
	}
	if other > 0 {
		t.Errorf("%d operations failed otherwise, e.g. %s", other, notes[0])
	}
}

// refusal is an error that refuses a path leading out of the workspace:
// seen as such, or as the kernel's refusal to let the sandbox user open it.
func refusal(err error) bool {
	return errors.Is(err, sandbox.ErrOutsideWorkspace) || errors.Is(err, fs.ErrPermission)
}

// waitInside runs cond in the sandbox until it succeeds.
func waitInside(t *testing.T, sb sandbox.Sandbox, cond string) {
	t.Helper()
	res := run(t, sb, "until "+cond+"; do sleep 0.05; done", sandbox.ExecOptions{Timeout: 30 * time.Second})
	if res.ExitCode != 0 || res.TimedOut {
		t.Fatalf("waiting for %q: %+v", cond, res)
	}
}
