package channel

import (
	"context"
	"os"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/runner-dev/runner/sandbox"
	"github.com/runner-dev/runner/sandbox/cmdwrap"
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
				res, err := c.Exec(ctx, "echo $((1+"+strconv.FormatInt(i, 10)+"))", "/", cmdwrap.NewMark(), opt)
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

// A command that answers its timeout's TERM with a HUP to its own process
// group (which the wrapper and its watchdog share, the wrapper leading the
// session) does not end the kill midway: a process it started in a session
// of its own is gone when Exec returns. gVisor sends that HUP itself when
// the watchdog stops a process of the group.
func TestServeExecTimeoutSurvivesHangup(t *testing.T) {
	if _, err := os.Stat(busyboxPath); err != nil {
		t.Fatalf("this test needs a static busybox at %s (apt-get install busybox-static): %v", busyboxPath, err)
	}
	for name, bin := range map[string]string{"sh": "", "busybox": busyboxPath} {
		t.Run(name, func(t *testing.T) {
			if bin != "" {
				dir := t.TempDir()
				if err := os.Symlink(bin, filepath.Join(dir, "sh")); err != nil {
					t.Fatal(err)
				}
				t.Setenv("PATH", dir+string(os.PathListSeparator)+os.Getenv("PATH"))
			}
			c := serveInProcess(t)
			// A duration no other process on the machine sleeps.
			sleeper := "sleep 3600." + strconv.Itoa(os.Getpid()) + strconv.Itoa(int(time.Now().UnixNano()%1e6))
			cmd := `trap 'kill -HUP 0' TERM
setsid sh -c 'trap "" TERM HUP; exec ` + sleeper + `' &
echo started
while :; do sleep 1; done`
			t.Cleanup(func() { killCmdline(sleeper) })
			res, err := c.Exec(context.Background(), cmd, "/", cmdwrap.NewMark(), sandbox.ExecOptions{Timeout: time.Second, MaxOutput: 4096})
			if err != nil {
				t.Fatal(err)
			}
			if !res.TimedOut || res.Stdout != "started\n" {
				t.Errorf("got %+v; want timed out, stdout \"started\\n\"", res)
			}
			if pids := liveCmdline(sleeper); len(pids) > 0 {
				t.Errorf("%q survived the timeout: pids %v", sleeper, pids)
			}
		})
	}
}

// liveCmdline lists the processes, not zombies, whose command line is cmd
// (its words joined by spaces).
func liveCmdline(cmd string) []int {
	var pids []int
	ents, _ := os.ReadDir("/proc")
	for _, e := range ents {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		b, err := os.ReadFile("/proc/" + e.Name() + "/cmdline")
		if err != nil || strings.TrimRight(strings.ReplaceAll(string(b), "\x00", " "), " ") != cmd {
			continue
		}
		st, err := os.ReadFile("/proc/" + e.Name() + "/stat")
		if err != nil {
			continue
		}
		if f := strings.Fields(string(st[strings.LastIndexByte(string(st), ')')+1:])); len(f) > 0 && f[0] == "Z" {
			continue
		}
		pids = append(pids, pid)
	}
	return pids
}

// killCmdline kills what liveCmdline finds, for a test that failed.
func killCmdline(cmd string) {
	for _, pid := range liveCmdline(cmd) {
		syscall.Kill(pid, syscall.SIGKILL)
	}
}
