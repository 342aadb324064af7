package docker_test

import (
	"encoding/json"
	"fmt"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/runner-dev/runner/sandbox"
	"github.com/runner-dev/runner/sandbox/docker"
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
		{"tool label", c.Config.Labels[docker.LabelTool] == "runner"},
		{"task label", c.Config.Labels[docker.LabelTask] == t.Name()},
		{"owner labels", c.Config.Labels[docker.LabelOwnerPID] != "" && c.Config.Labels[docker.LabelOwnerHost] != ""},
		{"deadline label", c.Config.Labels[docker.LabelDeadline] != ""},
	}
	for _, ch := range checks {
		if !ch.ok {
			t.Errorf("%s: not so in docker inspect:\n%+v", ch.what, c)
		}
	}
}

// The defaults themselves, as the README states them, read back from the
// engine and from inside a sandbox started with an empty Config: 4 GiB of
// memory and no swap, 1 CPU, 512 processes, 4096 open files, 1 MiB of
// logs, 4 GiB for each writable place, a 2 h lifetime.
func TestDefaultLimits(t *testing.T) {
	const gib = 1 << 30
	before := time.Now()
	sb := start(t, sandbox.Config{})
	out, err := dockerCLI(t, "inspect", sb.ID())
	if err != nil {
		t.Fatalf("docker inspect: %v: %s", err, out)
	}
	var got []struct {
		Config     struct{ Labels map[string]string }
		HostConfig struct {
			Memory, MemorySwap, NanoCpus, PidsLimit int64
			Tmpfs                                   map[string]string
			Ulimits                                 []struct {
				Name       string
				Soft, Hard int64
			}
			LogConfig struct{ Config map[string]string }
		}
		Mounts []struct{ Name, Destination string }
	}
	if err := json.Unmarshal([]byte(out), &got); err != nil || len(got) != 1 || len(got[0].Mounts) != 1 {
		t.Fatalf("decode docker inspect: %v\n%s", err, out)
	}
	h := got[0].HostConfig
	volume, err := dockerCLI(t, "volume", "inspect", "--format", "{{index .Options \"o\"}}", got[0].Mounts[0].Name)
	if err != nil {
		t.Fatalf("docker volume inspect: %v: %s", err, volume)
	}
	deadline, err := time.Parse(time.RFC3339, got[0].Config.Labels[docker.LabelDeadline])
	if err != nil {
		t.Fatal(err)
	}
	size := fmt.Sprintf("size=%d", 4*gib)
	engine := []struct {
		what string
		ok   bool
	}{
		{"memory 4 GiB", h.Memory == 4*gib},
		{"no swap", h.MemorySwap == h.Memory},
		{"1 CPU", h.NanoCpus == 1e9},
		{"512 processes", h.PidsLimit == 512},
		{"4096 open files", len(h.Ulimits) == 1 && h.Ulimits[0].Name == "nofile" && h.Ulimits[0].Soft == 4096 && h.Ulimits[0].Hard == 4096},
		{"1 MiB of logs", h.LogConfig.Config["max-size"] == "1m" && h.LogConfig.Config["max-file"] == "1"},
		{"4 GiB /tmp, /var/tmp, home", strings.Contains(h.Tmpfs["/tmp"], size) && strings.Contains(h.Tmpfs["/var/tmp"], size) && strings.Contains(h.Tmpfs["/home/sandbox"], size)},
		{"4 GiB workspace", strings.Contains(volume, size)},
		{"2 h lifetime", !deadline.Before(before.Add(2*time.Hour).Truncate(time.Second)) && !deadline.After(time.Now().Add(2*time.Hour))},
	}
	for _, c := range engine {
		if !c.ok {
			t.Errorf("%s: not so in docker inspect: %+v, volume options %q, deadline %s", c.what, h, volume, deadline)
		}
	}
	// Inside: the cgroup files (v2, else v1), ulimit and df.
	inside := output(t, sb, `first() { for f; do [ -r "$f" ] && { cat "$f"; return; }; done; echo none; }
echo "memory $(first /sys/fs/cgroup/memory.max /sys/fs/cgroup/memory/memory.limit_in_bytes)"
if [ -r /sys/fs/cgroup/memory.swap.max ]; then echo "swap $(cat /sys/fs/cgroup/memory.swap.max)"
elif [ -r /sys/fs/cgroup/memory/memory.memsw.limit_in_bytes ]; then echo "swap $(( $(cat /sys/fs/cgroup/memory/memory.memsw.limit_in_bytes) - $(cat /sys/fs/cgroup/memory/memory.limit_in_bytes) ))"
else echo "swap 0"; fi
if [ -r /sys/fs/cgroup/cpu.max ]; then echo "cpu $(cat /sys/fs/cgroup/cpu.max)"
else echo "cpu $(cat /sys/fs/cgroup/cpu/cpu.cfs_quota_us) $(cat /sys/fs/cgroup/cpu/cpu.cfs_period_us)"; fi
echo "pids $(first /sys/fs/cgroup/pids.max /sys/fs/cgroup/pids/pids.max)"
echo "nofile $(ulimit -n) $(ulimit -Hn)"
df -k /workspace /tmp /var/tmp /home/sandbox | awk 'NR > 1 { print "disk " $NF " " $2 }'`)
	want := strings.Join([]string{
		fmt.Sprintf("memory %d", 4*gib), "swap 0", "cpu 100000 100000", "pids 512", "nofile 4096 4096",
		"disk /workspace 4194304", "disk /tmp 4194304", "disk /var/tmp 4194304", "disk /home/sandbox 4194304",
	}, "\n")
	if inside != want {
		t.Errorf("seen from inside:\n%s\nwant:\n%s", inside, want)
	}
}
