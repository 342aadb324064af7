package channel

import (
	"bytes"
	"os"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// The helper's own watchdog: what the command wrapper's reap does in
// shell (sandbox/cmdwrap/exec.sh), done in-process, with no program
// started, so that it works when a fork loop has used up the process
// limit and costs no process start for a command that ends in time.
//
// The processes of a command are those whose environment holds
// RUNNER_EXEC=MARK, the command's first process (root, which leads a
// session of its own), every process of a session such a process leads,
// and their descendants.

// proc is one line of /proc/PID/stat, as reap needs it.
type proc struct {
	pid, ppid, sid int
}

// procs lists the live (not zombie) processes, but the helper itself.
func procs() []proc {
	ents, err := os.ReadDir("/proc")
	if err != nil {
		return nil
	}
	self := os.Getpid()
	var out []proc
	for _, e := range ents {
		pid, err := strconv.Atoi(e.Name())
		if err != nil || pid == self {
			continue
		}
		b, err := os.ReadFile("/proc/" + e.Name() + "/stat")
		if err != nil {
			continue
		}
		// pid (comm) state ppid pgrp session ...: comm may hold anything.
		i := bytes.LastIndexByte(b, ')')
		if i < 0 {
			continue
		}
		f := strings.Fields(string(b[i+1:]))
		if len(f) < 4 || f[0] == "Z" || f[0] == "X" {
			continue
		}
		ppid, _ := strconv.Atoi(f[1])
		sid, _ := strconv.Atoi(f[3])
		out = append(out, proc{pid: pid, ppid: ppid, sid: sid})
	}
	return out
}

// marked reports whether pid's environment holds the entry env exactly.
func marked(pid int, env []byte) bool {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/environ")
	if err != nil {
		return false
	}
	for e := range bytes.SplitSeq(b, []byte{0}) {
		if bytes.Equal(e, env) {
			return true
		}
	}
	return false
}

// targets lists the live processes of the command marked mark whose
// first process is root.
func targets(mark string, root int) []int {
	all := procs()
	env := []byte("RUNNER_EXEC=" + mark)
	found := map[int]bool{}
	leaders := map[int]bool{root: true}
	for _, p := range all {
		if p.pid == root || marked(p.pid, env) {
			found[p.pid] = true
			if p.pid == p.sid {
				leaders[p.pid] = true
			}
		}
	}
	for changed := true; changed; {
		changed = false
		for _, p := range all {
			if !found[p.pid] && (found[p.ppid] || leaders[p.sid]) {
				found[p.pid] = true
				changed = true
			}
		}
	}
	pids := make([]int, 0, len(found))
	for p := range found {
		pids = append(pids, p)
	}
	return pids
}

func signal(pids []int, sig syscall.Signal) {
	for _, p := range pids {
		_ = syscall.Kill(p, sig)
	}
}

// reapTerm is how long the command's processes have to end after TERM.
const reapTerm = time.Second

// reap asks the command's processes to stop, then kills whatever is left,
// stopping each round's first so that none forks a new one meanwhile. It
// returns when none is left, or after a bounded number of rounds.
func reap(mark string, root int) {
	pids := targets(mark, root)
	if len(pids) == 0 {
		return
	}
	signal(pids, syscall.SIGTERM)
	for end := time.Now().Add(reapTerm); time.Now().Before(end); {
		time.Sleep(20 * time.Millisecond)
		if len(targets(mark, root)) == 0 {
			return
		}
	}
	for range 200 {
		pids = targets(mark, root)
		if len(pids) == 0 {
			return
		}
		signal(pids, syscall.SIGSTOP)
		signal(targets(mark, root), syscall.SIGKILL)
	}
}

// oomKills is the sandbox's count of processes the kernel killed for
// memory (cgroup v2 or v1), 0 when it cannot be read.
func oomKills() int {
	for _, f := range []string{"/sys/fs/cgroup/memory.events", "/sys/fs/cgroup/memory/memory.oom_control"} {
		b, err := os.ReadFile(f)
		if err != nil {
			continue
		}
		for line := range strings.SplitSeq(string(b), "\n") {
			if v, ok := strings.CutPrefix(line, "oom_kill "); ok {
				n, _ := strconv.Atoi(strings.TrimSpace(v))
				return n
			}
		}
		return 0
	}
	return 0
}
