package docker_test

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"strings"
	"testing"
	"time"

	"github.com/runner-dev/runner/internal/dockertest"
	"github.com/runner-dev/runner/sandbox"
	"github.com/runner-dev/runner/sandbox/docker"
)

// rootSecret is the content of a root-only file of the race test's image.
const rootSecret = "ROOT-ONLY-SECRET-7d1c"

// swapperBinary is the swapper of the file-tool race (dockertest.Swapper).
func swapperBinary(t *testing.T) []byte { return dockertest.Swapper(t) }

// secretImage is the busybox image plus /secret/f, a file only root can
// read.
func secretImage(t testing.TB) string {
	return dockertest.BusyboxWith(t, dockertest.File{Name: "secret/f", Mode: 0o600, Body: []byte(rootSecret + "\n")})
}

// outsideFile is a file outside the workspace that the race aims at: dir
// is what the swapped symlink points to, name the file in it.
type outsideFile struct{ dir, name, owner string }

// cat reads the file as its owner, with the docker CLI: the sandbox's
// root has no capability to read files it does not own.
func (o outsideFile) cat(t *testing.T, sb *docker.Sandbox) string {
	t.Helper()
	p := o.dir + "/" + o.name
	out, err := dockerCLI(t, "exec", "-u", o.owner, sb.ID(), "cat", p)
	if err != nil {
		return fmt.Sprintf("cat %s: %v: %s", p, err, out)
	}
	return out
}

// startSwapper copies the swapper in and starts it in the background on
// the names a and b of the workspace. It returns a function that stops it
// and returns how many exchanges it made.
func startSwapper(t *testing.T, sb *docker.Sandbox, swapper []byte, a, b string) func() string {
	t.Helper()
	if err := sb.WriteFile(context.Background(), "swapper", swapper, 0o755); err != nil {
		t.Fatalf("copy the swapper in: %v", err)
	}
	output(t, sb, "rm -f /tmp/swapper.log && ./swapper "+a+" "+b+" /tmp/swapper.log >/dev/null 2>&1 & echo $! > /tmp/swapper.pid")
	waitInside(t, sb, "grep -q started /tmp/swapper.log")
	return func() string {
		output(t, sb, "kill $(cat /tmp/swapper.pid)")
		waitInside(t, sb, "grep -q swaps= /tmp/swapper.log")
		return output(t, sb, "grep swaps= /tmp/swapper.log")
	}
}

// waitInside runs cond in the sandbox until it succeeds.
func waitInside(t *testing.T, sb *docker.Sandbox, cond string) {
	t.Helper()
	res := run(t, sb, "until "+cond+"; do sleep 0.05; done", sandbox.ExecOptions{Timeout: 30 * time.Second})
	if res.ExitCode != 0 || res.TimedOut {
		t.Fatalf("waiting for %q: %+v", cond, res)
	}
}

// refusal is an error that refuses a path leading out of the workspace:
// seen as such, or as the kernel's refusal to let the sandbox user open it.
func refusal(err error) bool {
	return errors.Is(err, sandbox.ErrOutsideWorkspace) || errors.Is(err, fs.ErrPermission)
}

// While a process of the sandbox swaps a directory of the workspace with a
// symlink to a directory outside it, every few tens of microseconds,
// ReadFile and WriteFile through that directory never return a byte from
// outside the workspace and never write outside it: the daemon never
// resolves a path the agent controls, and the sandbox user's own checks
// hold. Tried on busybox with the memory-backed workspace and with the
// writable layer (disk limit off: the root filesystem is writable), and on
// Debian (dash); against a root-only file of the image and against a
// directory the sandbox user owns. The code that had the engine copy the
// file after checking its path lost within a few rounds in three of these.
func TestFilesRaceSymlinkSwap(t *testing.T) {
	swapper := swapperBinary(t)
	const rounds = 50
	home := outsideFile{"/home/sandbox/out", "f", "1000:1000"}
	for _, tc := range []struct {
		name    string
		image   func(testing.TB) string
		disk    int64
		targets []outsideFile
	}{
		{"busybox/disk=tmpfs", secretImage, 0, []outsideFile{{"/secret", "f", "0"}, home}},
		{"busybox/disk=layer", secretImage, -1, []outsideFile{{"/secret", "f", "0"}, home}},
		{"debian/disk=tmpfs", dockertest.SandboxImage, 0, []outsideFile{{"/etc", "shadow", "0"}, home}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			sb := start(t, sandbox.Config{Image: tc.image(t), Disk: tc.disk})
			output(t, sb, "mkdir -p "+home.dir+" && echo outside > "+home.dir+"/f")
			for _, target := range tc.targets {
				t.Run("target="+target.dir, func(t *testing.T) {
					raceFileTools(t, sb, swapper, target, rounds)
				})
			}
		})
	}
}

// raceFileTools reads and writes d/NAME while d is swapped with a symlink
// to target.dir, and fails the test if anything crossed the workspace.
func raceFileTools(t *testing.T, sb *docker.Sandbox, swapper []byte, target outsideFile, rounds int) {
	before := target.cat(t, sb)
	listing := output(t, sb, "ls -a "+target.dir)
	output(t, sb, "rm -rf d link d.swap && mkdir d && echo inside > d/"+target.name+" && ln -s "+target.dir+" link")
	stop := startSwapper(t, sb, swapper, "d", "link")
	ctx := context.Background()
	rel := "d/" + target.name
	var ok, refused, other int
	var leaks, notes []string
	for i := range rounds {
		got, err := sb.ReadFile(ctx, rel)
		switch {
		case err == nil && (string(got) == "inside\n" || strings.HasPrefix(string(got), "written-")):
			ok++
		case err == nil:
			leaks = append(leaks, fmt.Sprintf("read %d returned %q", i, got))
		case refusal(err):
			refused++
		default:
			other++
			notes = append(notes, err.Error())
		}
		if e := fmt.Sprint(err); strings.Contains(e, rootSecret) || strings.Contains(e, "outside\n") {
			leaks = append(leaks, fmt.Sprintf("read %d error shows the content: %v", i, err))
		}
		err = sb.WriteFile(ctx, rel, []byte(fmt.Sprintf("written-%d\n", i)), 0o644)
		switch {
		case err == nil:
			ok++
		case refusal(err):
			refused++
		default:
			other++
			notes = append(notes, err.Error())
		}
		if i%10 == 9 {
			if got := target.cat(t, sb); got != before {
				leaks = append(leaks, fmt.Sprintf("after round %d, %s/%s holds %q", i, target.dir, target.name, got))
			}
		}
		if len(leaks) > 0 {
			break
		}
	}
	swaps := stop()
	t.Logf("%s; %d operations inside, %d refused, %d other errors", swaps, ok, refused, other)
	if got := target.cat(t, sb); got != before {
		leaks = append(leaks, fmt.Sprintf("%s/%s now holds %q, want %q", target.dir, target.name, got, before))
	}
	if ls := output(t, sb, "ls -a "+target.dir); ls != listing {
		leaks = append(leaks, fmt.Sprintf("%s now holds %q, want %q", target.dir, ls, listing))
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
	if ps := output(t, sb, "ps -o args | grep runner-files | grep -v grep || true"); ps != "" {
		t.Errorf("file helpers left running:\n%s", ps)
	}
}
