package hostcpu

import (
	"encoding/binary"
	"errors"
	"fmt"
	"os"
	"runtime"
	"strings"
	"syscall"
	"time"

	"golang.org/x/sys/unix"
)

// Meter counts CPU time from Start to Stop.
type Meter struct {
	fd       int
	family   uint16
	self     int
	selfCPU0 time.Duration
	stop     chan struct{}
	done     chan result
	// Owned by the listening goroutine:
	start, end snapshot
	exits      [kindUnknown + 1]time.Duration
	nExits     int
	lost       bool
	seen       map[int]proc // parents read, for when they are gone
	cls        *classifier
	thread0    time.Duration
	onlyNew    bool
	ignoreTids map[int]bool // the threads of the processes in cls.ignore
}

type result struct {
	u   Usage
	err error
}

// Start registers for the exit records of every CPU, reads every process
// alive, and starts counting. Stop must follow, or the listening thread
// stays.
func Start() (*Meter, error) { return start(false) }

// StartNew is Start for work that starts its own containers: those
// already running (their shims and storage mounts, what runs in them)
// count nowhere, though the engine's daemons, which serve them too, still
// count whole. A thread such a process starts later and that exits before
// Stop still counts.
func StartNew() (*Meter, error) { return start(true) }

func start(onlyNew bool) (*Meter, error) {
	m := &Meter{self: os.Getpid(), stop: make(chan struct{}), done: make(chan result, 1), seen: map[int]proc{}, onlyNew: onlyNew}
	m.cls = &classifier{self: m.self, lookup: m.lookupLive, ignore: map[int]bool{}}
	if err := m.open(); err != nil {
		return nil, fmt.Errorf("hostcpu: %w", err)
	}
	ready := make(chan error, 1)
	go m.listen(ready)
	if err := <-ready; err != nil {
		unix.Close(m.fd)
		return nil, fmt.Errorf("hostcpu: %w", err)
	}
	m.selfCPU0 = selfCPU()
	return m, nil
}

// Stop reads every process alive again, the exit records up to then, and
// returns what each party spent since Start.
func (m *Meter) Stop() (Usage, error) {
	close(m.stop)
	r := <-m.done
	if r.err != nil {
		return Usage{}, r.err
	}
	// The listening thread's own work (records, snapshots) is not runner's.
	r.u.Runner += selfCPU() - m.selfCPU0
	return r.u, nil
}

// selfCPU is this process's CPU time so far, with the children it waited
// for.
func selfCPU() time.Duration {
	var self, kids unix.Rusage
	unix.Getrusage(unix.RUSAGE_SELF, &self)
	unix.Getrusage(unix.RUSAGE_CHILDREN, &kids)
	return time.Duration(self.Utime.Nano() + self.Stime.Nano() + kids.Utime.Nano() + kids.Stime.Nano())
}

// threadCPU is the calling thread's CPU time so far.
func threadCPU() time.Duration {
	var ru unix.Rusage
	unix.Getrusage(unix.RUSAGE_THREAD, &ru)
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// listen owns one locked thread, so that its CPU time can be taken out of
// runner's.
func (m *Meter) listen(ready chan<- error) {
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	defer unix.Close(m.fd)
	if err := m.register(unix.TASKSTATS_CMD_ATTR_REGISTER_CPUMASK); err != nil {
		ready <- err
		return
	}
	m.drain(false) // exits before the first snapshot count for nothing
	m.ignoreTids = map[int]bool{}
	if m.onlyNew {
		for pid, tids := range take(m.self, nil).perContainer {
			m.cls.ignore[pid] = true
			for _, t := range tids {
				m.ignoreTids[t] = true
			}
		}
	}
	m.start = take(m.self, m.cls.ignore)
	m.exits = [kindUnknown + 1]time.Duration{}
	m.nExits = 0
	m.thread0 = threadCPU()
	ready <- nil
	var buf [1 << 16]byte
	for {
		select {
		case <-m.stop:
			m.drain(true)
			m.end = take(m.self, m.cls.ignore)
			m.drain(true)
			m.register(unix.TASKSTATS_CMD_ATTR_DEREGISTER_CPUMASK)
			m.done <- m.result(threadCPU() - m.thread0)
			return
		default:
		}
		n, _, err := unix.Recvfrom(m.fd, buf[:], 0)
		switch {
		case err == nil:
			m.parse(buf[:n])
		case errors.Is(err, unix.ENOBUFS):
			m.lost = true
		case errors.Is(err, unix.EAGAIN), errors.Is(err, unix.EINTR):
		default:
			m.done <- result{err: fmt.Errorf("hostcpu: read exit records: %w", err)}
			<-m.stop
			return
		}
	}
}

// drain reads the records queued so far, counting them if count is set.
func (m *Meter) drain(count bool) {
	var buf [1 << 16]byte
	for {
		n, _, err := unix.Recvfrom(m.fd, buf[:], unix.MSG_DONTWAIT)
		if errors.Is(err, unix.ENOBUFS) {
			m.lost = true
			continue
		}
		if err != nil {
			return
		}
		if count {
			m.parse(buf[:n])
		}
	}
}

func (m *Meter) result(own time.Duration) result {
	if m.lost {
		return result{err: errors.New("hostcpu: the kernel dropped exit records (receive buffer full)")}
	}
	var u Usage
	cpu := func(k kind) time.Duration { return m.end.cpu[k] - m.start.cpu[k] + m.exits[k] }
	u.Engine = cpu(kindEngine) + cpu(kindShim) + cpu(kindRuntime)
	u.Sandbox = cpu(kindSandbox)
	u.Unknown = cpu(kindUnknown)
	u.Machine = m.end.busy - m.start.busy
	u.Runner = -own
	u.Exits = m.nExits
	u.ShimsAtStart, u.ShimsAtEnd = m.start.shims, m.end.shims
	return result{u: u}
}

// lookupLive reads a parent from /proc, or remembers it if it is gone.
func (m *Meter) lookupLive(pid int) (proc, bool) {
	p, ok := readStat(fmt.Sprintf("/proc/%d/stat", pid))
	if ok {
		m.seen[pid] = p
		return p, true
	}
	p, ok = m.seen[pid]
	return p, ok
}

// exited counts one thread's exit record.
func (m *Meter) exited(tid, ppid int, comm string, cpu time.Duration) {
	if m.end.tids != nil && m.end.tids[tid] {
		return // counted alive at the end already
	}
	if m.ignoreTids[tid] {
		return
	}
	m.nExits++
	m.exits[m.cls.kindOf(tid, proc{comm: comm, ppid: ppid})] += cpu
}

// The generic netlink protocol, as much of it as taskstats needs.
const (
	genlIDCtrl  = 0x10
	nlHdrLen    = unix.SizeofNlMsghdr
	genlHdrLen  = 4 // struct genlmsghdr
	attrHdrLen  = unix.SizeofNlAttr
	nlaTypeMask = 0x3fff
)

func (m *Meter) open() error {
	fd, err := unix.Socket(unix.AF_NETLINK, unix.SOCK_RAW|unix.SOCK_CLOEXEC, unix.NETLINK_GENERIC)
	if err != nil {
		return err
	}
	m.fd = fd
	// Thousands of threads exit a second when a batch starts its
	// sandboxes; the records must not overflow the socket.
	if unix.SetsockoptInt(fd, unix.SOL_SOCKET, unix.SO_RCVBUFFORCE, 64<<20) != nil {
		unix.SetsockoptInt(fd, unix.SOL_SOCKET, unix.SO_RCVBUF, 64<<20)
	}
	tv := unix.NsecToTimeval((50 * time.Millisecond).Nanoseconds())
	unix.SetsockoptTimeval(fd, unix.SOL_SOCKET, unix.SO_RCVTIMEO, &tv)
	if err := unix.Bind(fd, &unix.SockaddrNetlink{Family: unix.AF_NETLINK}); err != nil {
		unix.Close(fd)
		return err
	}
	if m.family, err = m.resolve("TASKSTATS"); err != nil {
		unix.Close(fd)
		return err
	}
	return nil
}

// send writes one generic netlink request with one string attribute.
func (m *Meter) send(typ uint16, cmd uint8, attr uint16, value string) error {
	val := append([]byte(value), 0)
	alen := attrHdrLen + len(val)
	msg := make([]byte, nlHdrLen+genlHdrLen+align(alen))
	ne := binary.NativeEndian
	ne.PutUint32(msg[0:], uint32(len(msg)))
	ne.PutUint16(msg[4:], typ)
	ne.PutUint16(msg[6:], unix.NLM_F_REQUEST)
	msg[nlHdrLen] = cmd
	msg[nlHdrLen+1] = 1 // version
	a := msg[nlHdrLen+genlHdrLen:]
	ne.PutUint16(a[0:], uint16(alen))
	ne.PutUint16(a[2:], attr)
	copy(a[attrHdrLen:], val)
	return unix.Sendto(m.fd, msg, 0, &unix.SockaddrNetlink{Family: unix.AF_NETLINK})
}

// resolve asks the generic netlink controller for a family's id.
func (m *Meter) resolve(name string) (uint16, error) {
	if err := m.send(genlIDCtrl, unix.CTRL_CMD_GETFAMILY, unix.CTRL_ATTR_FAMILY_NAME, name); err != nil {
		return 0, err
	}
	var buf [1 << 16]byte
	n, _, err := unix.Recvfrom(m.fd, buf[:], 0)
	if err != nil {
		return 0, fmt.Errorf("resolve %s: %w", name, err)
	}
	msgs, err := syscall.ParseNetlinkMessage(buf[:n])
	if err != nil {
		return 0, err
	}
	for _, msg := range msgs {
		if msg.Header.Type == syscall.NLMSG_ERROR {
			return 0, fmt.Errorf("resolve %s: errno %d", name, -int32(binary.NativeEndian.Uint32(msg.Data)))
		}
		for _, a := range attrs(msg.Data[genlHdrLen:]) {
			if a.typ == unix.CTRL_ATTR_FAMILY_ID && len(a.val) >= 2 {
				return binary.NativeEndian.Uint16(a.val), nil
			}
		}
	}
	return 0, fmt.Errorf("resolve %s: no family id in the reply", name)
}

// register (or deregisters) for the exit records of every possible CPU.
func (m *Meter) register(attr uint16) error {
	cpus, err := os.ReadFile("/sys/devices/system/cpu/possible")
	if err != nil {
		return err
	}
	return m.send(m.family, unix.TASKSTATS_CMD_GET, attr, strings.TrimSpace(string(cpus)))
}

// parse counts the exit records in one read.
func (m *Meter) parse(b []byte) {
	msgs, err := syscall.ParseNetlinkMessage(b)
	if err != nil {
		return
	}
	for _, msg := range msgs {
		if msg.Header.Type != m.family || len(msg.Data) < genlHdrLen {
			continue
		}
		for _, a := range attrs(msg.Data[genlHdrLen:]) {
			if a.typ != unix.TASKSTATS_TYPE_AGGR_PID {
				continue // a whole thread group's sum repeats its threads'
			}
			for _, in := range attrs(a.val) {
				if in.typ == unix.TASKSTATS_TYPE_STATS {
					m.record(in.val)
				}
			}
		}
	}
}

// Offsets in struct taskstats (linux/taskstats.h, unchanged since
// version 1 of the struct).
const (
	offComm  = 80
	offPid   = 128
	offPpid  = 132
	offUtime = 152
	offStime = 160
)

func (m *Meter) record(ts []byte) {
	if len(ts) < offStime+8 {
		return
	}
	ne := binary.NativeEndian
	comm := ts[offComm : offComm+32]
	if i := strings.IndexByte(string(comm), 0); i >= 0 {
		comm = comm[:i]
	}
	us := ne.Uint64(ts[offUtime:]) + ne.Uint64(ts[offStime:])
	m.exited(int(ne.Uint32(ts[offPid:])), int(ne.Uint32(ts[offPpid:])), string(comm), time.Duration(us)*time.Microsecond)
}

type attr struct {
	typ uint16
	val []byte
}

// attrs splits netlink attributes.
func attrs(b []byte) []attr {
	var out []attr
	ne := binary.NativeEndian
	for len(b) >= attrHdrLen {
		l := int(ne.Uint16(b))
		if l < attrHdrLen || l > len(b) {
			break
		}
		out = append(out, attr{typ: ne.Uint16(b[2:]) & nlaTypeMask, val: b[attrHdrLen:l]})
		b = b[min(align(l), len(b)):]
	}
	return out
}

func align(n int) int { return (n + 3) &^ 3 }
