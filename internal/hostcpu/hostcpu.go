// Package hostcpu measures the host's CPU time over an interval by who
// spent it, for benchmarks:
//
//   - Runner: this process, with the children it waited for (getrusage),
//     less the meter's own work;
//   - Engine: dockerd, containerd, the container shims
//     (containerd-shim*), the runtime processes a shim starts (runc and
//     its init stages, until one becomes a container's process), the
//     fuse-overlayfs storage driver's daemons (one a container's file
//     system) and whatever else dockerd or containerd start;
//   - Sandbox: the containers' processes: everything a shim starts that is
//     not the runtime, and their descendants. A command started by an exec
//     is runc's last init stage, which execs it: the command's time
//     includes that stage's, in the same thread, before it became the
//     command.
//
// Threads alive at the start and at the end are read from /proc
// (schedstat, in nanoseconds); threads that exit in between, including
// whole shims and containers removed before the end, from the kernel's
// exit records (taskstats, registered for every CPU), which sample CPU
// time at the scheduler's tick: exact in sum over many processes, not for
// one. A record whose parent process is gone before it is read, and was
// never seen, counts as Unknown. Any other process on the machine (another
// worker's, the shell's) counts nowhere; the engine's daemons, shared by
// every container, are counted whole, whoever's work they did.
//
// Needs Linux and root (the exit records); Start fails elsewhere.
package hostcpu

import "time"

// Usage is the CPU time each party spent between Start and Stop.
type Usage struct {
	Runner, Engine, Sandbox, Unknown time.Duration
	// Machine is every CPU's busy time (/proc/stat: all but idle, iowait
	// and steal), whoever's: the parties' and everything else the machine
	// ran.
	Machine time.Duration
	// Exits is how many thread exit records the meter read.
	Exits int
	// ShimsAtStart and ShimsAtEnd count the container shims (one a
	// container) alive at either end: containers the measured work did not
	// start and stop itself ran beside it (StartNew leaves out those
	// alive at the start).
	ShimsAtStart, ShimsAtEnd int
}

// Total is the sum of every party's time.
func (u Usage) Total() time.Duration { return u.Runner + u.Engine + u.Sandbox + u.Unknown }
