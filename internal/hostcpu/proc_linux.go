package hostcpu

import (
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"
)

// kind is who a process's CPU time is counted for.
type kind int

const (
	kindOther kind = iota
	kindRunner
	kindEngine
	kindShim    // a container shim: engine, and the parent of a container's processes
	kindRuntime // runc and its init stages: engine, and the parent of an exec's command
	kindSandbox
	kindUnknown
)

// proc is what /proc/<pid>/stat says of a process.
type proc struct {
	comm  string
	ppid  int
	start uint64 // clock ticks after boot
}

// readStat reads /proc/<pid>/stat, or /proc/<pid>/task/<tid>/stat.
func readStat(path string) (proc, bool) {
	body, err := os.ReadFile(path)
	if err != nil {
		return proc{}, false
	}
	s := string(body)
	open, end := strings.IndexByte(s, '('), strings.LastIndexByte(s, ')')
	if open < 0 || end < open || end+2 > len(s) {
		return proc{}, false
	}
	f := strings.Fields(s[end+2:])
	if len(f) < 20 {
		return proc{}, false
	}
	// Fields after the command: state, ppid (4th of stat), ... starttime
	// (22nd).
	ppid, _ := strconv.Atoi(f[1])
	start, _ := strconv.ParseUint(f[19], 10, 64)
	return proc{comm: s[open+1 : end], ppid: ppid, start: start}, true
}

// isShim reports whether comm names a container shim.
func isShim(comm string) bool { return strings.HasPrefix(comm, "containerd-shim") }

// perContainer reports whether comm names a process the engine runs for
// one container: its shim, or the fuse-overlayfs storage driver's mount
// of its file system (a daemon whose parent is init).
func perContainer(comm string) bool { return isShim(comm) || comm == "fuse-overlayfs" }

// isRuntime reports whether a shim's child named comm is the runtime
// (runc, and the stages of its init until the last becomes the
// container's process), not a container's process.
func isRuntime(comm string) bool { return strings.HasPrefix(comm, "runc") }

// classifier decides kinds, reading parents through lookup.
type classifier struct {
	self   int
	ignore map[int]bool // perContainer processes whose containers count nowhere
	lookup func(pid int) (proc, bool)
	memo   map[int]kind
}

// kindOf is the kind of process pid, whose stat is p.
func (c *classifier) kindOf(pid int, p proc) kind {
	return c.kindAt(pid, p, 0)
}

func (c *classifier) kindAt(pid int, p proc, depth int) kind {
	switch {
	case pid == c.self:
		return kindRunner
	case p.comm == "dockerd" || p.comm == "containerd":
		return kindEngine
	case c.ignore[pid]:
		return kindOther
	case p.comm == "fuse-overlayfs":
		return kindEngine
	case isShim(p.comm):
		return kindShim
	case p.ppid <= 1 || depth > 64:
		return kindOther
	}
	parent, ok := c.memo[p.ppid]
	if !ok {
		pp, found := c.lookup(p.ppid)
		if !found {
			return kindUnknown
		}
		parent = c.kindAt(p.ppid, pp, depth+1)
		if c.memo != nil {
			c.memo[p.ppid] = parent
		}
	}
	switch parent {
	case kindShim, kindRuntime:
		if isRuntime(p.comm) {
			return kindRuntime
		}
		return kindSandbox
	case kindRunner, kindEngine, kindSandbox, kindUnknown:
		return parent
	}
	return kindOther
}

// machineBusy is the time every CPU spent busy since boot: the first line
// of /proc/stat, less idle, iowait and steal (another virtual machine's),
// in USER_HZ ticks (100 a second).
func machineBusy() time.Duration {
	body, err := os.ReadFile("/proc/stat")
	if err != nil {
		return 0
	}
	line, _, _ := strings.Cut(string(body), "\n")
	f := strings.Fields(line)
	if len(f) < 9 || f[0] != "cpu" {
		return 0
	}
	var busy int64
	// user nice system idle iowait irq softirq steal (guest time is in user).
	for i, v := range f[1:9] {
		if i == 3 || i == 4 || i == 7 {
			continue
		}
		n, _ := strconv.ParseInt(v, 10, 64)
		busy += n
	}
	return time.Duration(busy) * time.Second / 100
}

// snapshot is the CPU time so far of the threads alive at one moment,
// by kind, and which threads those were.
type snapshot struct {
	cpu   [kindUnknown + 1]time.Duration
	tids  map[int]bool
	shims int
	// The processes the engine runs for one container (perContainer),
	// and their threads.
	perContainer map[int][]int
	busy         time.Duration // machineBusy
}

// take reads every process of the machine; the containers of the processes
// in ignore count nowhere.
func take(self int, ignore map[int]bool) snapshot {
	procs := map[int]proc{}
	dirs, _ := filepath.Glob("/proc/[0-9]*")
	for _, d := range dirs {
		pid, err := strconv.Atoi(filepath.Base(d))
		if err != nil {
			continue
		}
		if p, ok := readStat(d + "/stat"); ok {
			procs[pid] = p
		}
	}
	c := &classifier{self: self, ignore: ignore, memo: map[int]kind{}, lookup: func(pid int) (proc, bool) {
		p, ok := procs[pid]
		return p, ok
	}}
	s := snapshot{tids: map[int]bool{}, perContainer: map[int][]int{}, busy: machineBusy()}
	for pid, p := range procs {
		k := c.kindOf(pid, p)
		tasks, _ := filepath.Glob("/proc/" + strconv.Itoa(pid) + "/task/[0-9]*")
		if isShim(p.comm) {
			s.shims++
		}
		if perContainer(p.comm) {
			for _, t := range tasks {
				tid, _ := strconv.Atoi(filepath.Base(t))
				s.perContainer[pid] = append(s.perContainer[pid], tid)
			}
		}
		if k == kindOther || k == kindRunner {
			continue
		}
		for _, t := range tasks {
			tid, _ := strconv.Atoi(filepath.Base(t))
			body, err := os.ReadFile(t + "/schedstat")
			if err != nil {
				continue
			}
			f := strings.Fields(string(body))
			if len(f) == 0 {
				continue
			}
			ns, _ := strconv.ParseInt(f[0], 10, 64)
			s.cpu[k] += time.Duration(ns)
			s.tids[tid] = true
		}
	}
	return s
}
