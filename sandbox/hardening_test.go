package sandbox_test

import (
	"context"
	"encoding/json"
	"regexp"
	"strings"
	"testing"

	"github.com/runner-dev/runner/sandbox"
)

// The settings are read back from inside the container, where they matter.
func TestHardeningSeenFromInside(t *testing.T) {
	sb := start(t, sandbox.Config{Memory: 256 << 20, Pids: 100, NoFile: 1000})
	status := output(t, sb, "cat /proc/self/status")
	for _, want := range []string{`NoNewPrivs:\s+1`, `CapEff:\s+0000000000000000`, `CapPrm:\s+0000000000000000`, `CapBnd:\s+0000000000000000`} {
		if !regexp.MustCompile(want).MatchString(status) {
			t.Errorf("/proc/self/status does not match %s:\n%s", want, status)
		}
	}
	if got := output(t, sb, "id -u; id -g"); got != "1000\n1000" {
		t.Errorf("uid, gid = %q, want 1000 and 1000", got)
	}
	if got := output(t, sb, "ls /sys/class/net"); got != "lo" {
		t.Errorf("network interfaces = %q, want only lo", got)
	}
	if got := output(t, sb, "ulimit -n"); got != "1000" {
		t.Errorf("open files limit = %q, want 1000", got)
	}
	if got := output(t, sb, "pwd"); got != sandbox.Workdir {
		t.Errorf("working directory = %q, want %s", got, sandbox.Workdir)
	}
	// PID 1 is the engine's init, which reaps zombies; its child is the
	// sleep that ends the sandbox's life.
	init := output(t, sb, "tr '\\0' ' ' </proc/1/cmdline")
	if !strings.Contains(init, "init") || !strings.Contains(init, "sleep") {
		t.Errorf("PID 1 = %q, want the engine's init running sleep", init)
	}
	if res := run(t, sb, "ls -l /var/run/docker.sock /run/docker.sock", sandbox.ExecOptions{}); res.ExitCode == 0 {
		t.Errorf("the Docker socket is visible in the sandbox:\n%s", res.Output)
	}
}

// The engine's own record of the container, read with the docker CLI.
func TestHardeningSeenByEngine(t *testing.T) {
	sb := start(t, sandbox.Config{Memory: 300 << 20, CPUs: 0.5, Pids: 77, NoFile: 999})
	out, err := dockerCLI(t, "inspect", sb.ID())
	if err != nil {
		t.Fatalf("docker inspect: %v: %s", err, out)
	}
	var got []struct {
		Config struct {
			User   string
			Labels map[string]string
		}
		HostConfig struct {
			NetworkMode     string
			CapDrop, CapAdd []string
			SecurityOpt     []string
			Privileged      bool
			Init            *bool
			Memory          int64
			MemorySwap      int64
			NanoCpus        int64
			PidsLimit       int64
			Binds           []string
			ReadonlyRootfs  bool
			Tmpfs           map[string]string
			Ulimits         []struct {
				Name       string
				Soft, Hard int64
			}
			LogConfig struct {
				Type   string
				Config map[string]string
			}
		}
		Mounts []struct {
			Type, Destination, Driver string
			RW                        bool
		}
	}
	if err := json.Unmarshal([]byte(out), &got); err != nil || len(got) != 1 {
		t.Fatalf("decode docker inspect: %v", err)
	}
	c := got[0]
	h := c.HostConfig
	checks := []struct {
		what string
		ok   bool
	}{
		{"network none", h.NetworkMode == "none"},
		{"all capabilities dropped", len(h.CapDrop) == 1 && strings.EqualFold(h.CapDrop[0], "ALL") && len(h.CapAdd) == 0},
		{"no-new-privileges", strings.Join(h.SecurityOpt, ",") == "no-new-privileges:true"},
		{"not privileged", !h.Privileged},
		{"init", h.Init != nil && *h.Init},
		{"memory 300 MiB", h.Memory == 300<<20},
		{"swap equal to memory", h.MemorySwap == h.Memory},
		{"half a CPU", h.NanoCpus == 5e8},
		{"pids 77", h.PidsLimit == 77},
		{"nofile 999", len(h.Ulimits) == 1 && h.Ulimits[0].Name == "nofile" && h.Ulimits[0].Soft == 999 && h.Ulimits[0].Hard == 999},
		{"bounded logs", h.LogConfig.Type == "json-file" && h.LogConfig.Config["max-size"] != ""},
		{"no bind mounts: only the workspace volume", len(h.Binds) == 0 && len(c.Mounts) == 1 &&
			c.Mounts[0].Type == "volume" && c.Mounts[0].Destination == sandbox.Workdir && c.Mounts[0].Driver == "local"},
		{"read-only root filesystem", h.ReadonlyRootfs},
		{"size-limited scratch space", strings.Contains(h.Tmpfs["/tmp"], "size=") && strings.Contains(h.Tmpfs["/home/sandbox"], "uid=1000")},
		{"user 1000:1000", c.Config.User == "1000:1000"},
		{"tool label", c.Config.Labels[sandbox.LabelTool] == "runner"},
		{"task label", c.Config.Labels[sandbox.LabelTask] == t.Name()},
		{"owner labels", c.Config.Labels[sandbox.LabelOwnerPID] != "" && c.Config.Labels[sandbox.LabelOwnerHost] != ""},
		{"deadline label", c.Config.Labels[sandbox.LabelDeadline] != ""},
	}
	for _, ch := range checks {
		if !ch.ok {
			t.Errorf("%s: not so in docker inspect:\n%+v", ch.what, c)
		}
	}
}

func TestPidsLimitStopsForkLoop(t *testing.T) {
	sb := start(t, sandbox.Config{Pids: 40})
	// Each iteration forks a sleeper; the limit must stop the loop from
	// getting anywhere near 200 (the shell gives up at the first failed
	// fork), and the timeout must then clean up even though no process can
	// be forked: the outer shell waits with exec, which needs no fork.
	res := run(t, sb, `sh -c 'i=0; while [ $i -lt 200 ]; do sleep 100 >/dev/null 2>&1 & i=$((i+1)); done'; exec sleep 100`,
		sandbox.ExecOptions{Timeout: 3e9})
	if !res.TimedOut {
		t.Errorf("TimedOut = false, want true; output:\n%s", res.Output)
	}
	if !regexp.MustCompile(`(?i)can't fork|resource temporarily unavailable`).MatchString(res.Stderr) {
		t.Errorf("stderr shows no failed fork:\n%s", res.Stderr)
	}
	if got := output(t, sb, "ps -o pid,args | grep -c '[s]leep 100' || true"); got != "0" {
		t.Errorf("%s fork-loop sleepers survived the timeout", got)
	}
	ctx := context.Background()
	if res, err := sb.Exec(ctx, "echo alive", sandbox.ExecOptions{}); err != nil || res.Stdout != "alive\n" {
		t.Errorf("sandbox unusable after the fork loop: %+v, %v", res, err)
	}
}
