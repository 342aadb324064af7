package sandbox

import (
	"crypto/rand"
	"encoding/hex"
	"errors"
	"os"
	"strconv"
	"strings"
	"syscall"
)

// Owner identifies the process that is responsible for a container, so that
// Cleanup can tell a live run from a dead one. Start distinguishes a reused
// pid from the original process.
type Owner struct {
	Host  string
	PID   int
	Start string // process start time in clock ticks since boot, "" if unknown
}

// Self is the owner record of the calling process.
func Self() Owner {
	host, _ := os.Hostname()
	return Owner{Host: host, PID: os.Getpid(), Start: processStart(os.Getpid())}
}

// Alive reports whether the owner process still runs. It can only tell for
// owners on this host; for any other host it answers true, and Cleanup
// relies on the deadline instead.
func (o Owner) Alive() bool {
	if host, _ := os.Hostname(); o.Host != host || o.PID <= 0 {
		return true
	}
	err := syscall.Kill(o.PID, 0)
	if errors.Is(err, syscall.ESRCH) {
		return false
	}
	if o.Start != "" {
		if now := processStart(o.PID); now != "" && now != o.Start {
			return false // the pid was reused by another process
		}
	}
	return true
}

// processStart reads the start time of pid from /proc (Linux); "" elsewhere.
func processStart(pid int) string {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return ""
	}
	// The command name may contain spaces and parentheses: fields are
	// counted after the last ')'. starttime is field 22 of the whole line.
	s := string(b)
	i := strings.LastIndexByte(s, ')')
	if i < 0 {
		return ""
	}
	f := strings.Fields(s[i+1:])
	if len(f) < 20 {
		return ""
	}
	return f[19]
}

// RandomID is 12 random hex digits, for names that must not collide.
func RandomID() string {
	b := make([]byte, 6)
	_, _ = rand.Read(b)
	return hex.EncodeToString(b)
}
