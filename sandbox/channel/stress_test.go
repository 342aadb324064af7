package channel

import (
	"context"
	"os"
	"path/filepath"
	"runtime"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/runner-dev/runner/sandbox"
)

// busyboxPath is where Debian's busybox-static puts the binary: the shell
// of the test sandboxes (busybox ash), which .ci/run installs.
const busyboxPath = "/bin/busybox"

// Many short commands, concurrent and in a row, through an in-process
// helper while every CPU is kept busy: every reply comes promptly. Each
// command ends long before its timeout, so a reply that comes only at the
// timeout (or not at all) is a lost one. It runs with the host's sh and
// with busybox ash, the shell of the test sandboxes.
func TestServeExecStress(t *testing.T) {
	n := 600
	if testing.Short() {
		n = 300
	}
	shells := map[string]string{"sh": ""}
	if _, err := os.Stat(busyboxPath); err != nil {
		t.Fatalf("this test needs a static busybox at %s (apt-get install busybox-static): %v", busyboxPath, err)
	}
	shells["busybox"] = busyboxPath
	for name, bin := range shells {
		t.Run(name, func(t *testing.T) {
			if bin != "" {
				dir := t.TempDir()
				if err := os.Symlink(bin, filepath.Join(dir, "sh")); err != nil {
					t.Fatal(err)
				}
				t.Setenv("PATH", dir+string(os.PathListSeparator)+os.Getenv("PATH"))
			}
			stressExec(t, n)
		})
	}
}

func stressExec(t *testing.T, n int) {
	c := serveInProcess(t)
	// CPU contention: one busy loop per CPU, for the test's length.
	stop := make(chan struct{})
	var spin sync.WaitGroup
	for range runtime.NumCPU() {
		spin.Add(1)
		go func() {
			defer spin.Done()
			for {
				select {
				case <-stop:
					return
				default:
					for i := 0; i < 1e5; i++ {
					}
				}
			}
		}()
	}
	defer func() {
		close(stop)
		spin.Wait()
	}()
	const timeout = 20 * time.Second
	opt := sandbox.ExecOptions{Timeout: timeout, MaxOutput: 1024}
	var next atomic.Int64
	var failed atomic.Bool
	var wg sync.WaitGroup
	for range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for !failed.Load() {
				i := next.Add(1)
				if i > int64(n) {
					return
				}
				ctx, cancel := context.WithTimeout(context.Background(), timeout+KillGrace+10*time.Second)
				start := time.Now()
				res, err := c.Exec(ctx, "echo $((1+"+strconv.FormatInt(i, 10)+"))", "/", opt)
				cancel()
				switch {
				case err != nil:
					failed.Store(true)
					t.Errorf("command %d: %v after %s", i, err, time.Since(start).Round(time.Millisecond))
				case res.TimedOut || time.Since(start) > timeout/2:
					failed.Store(true)
					t.Errorf("command %d: its reply came after %s (timed out %v, exit %d, stdout %q): lost until its timeout",
						i, time.Since(start).Round(time.Millisecond), res.TimedOut, res.ExitCode, res.Stdout)
				case res.ExitCode != 0 || res.Stdout != strconv.FormatInt(i+1, 10)+"\n" || res.Stderr != "":
					failed.Store(true)
					t.Errorf("command %d: exit %d, stdout %q, stderr %q", i, res.ExitCode, res.Stdout, res.Stderr)
				}
			}
		}()
	}
	wg.Wait()
}
