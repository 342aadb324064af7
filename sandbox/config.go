package sandbox

import (
	"fmt"
	"strings"
	"time"

	"github.com/runner-dev/runner/internal/egress"
)

// Config describes one sandbox. The zero value of every field but Image
// means "use the safe default"; Defaults lists them.
type Config struct {
	// Image is the sandbox image; it must provide sh, sleep and /proc.
	Image string
	// Runtime names the isolation runtime, among those the backend offers
	// (Info.Runtimes): for the Docker backend "runc", the engine's default,
	// or "runsc", gVisor's user-space kernel. Empty is the backend's
	// default; a runtime the backend does not have is refused at Start.
	Runtime string
	// Network is "none" (the default: loopback only) or "bridge".
	Network string
	// Egress, when not empty, is an allowlist of host names and ports (see
	// package egress; Network must then be left "none"): the sandbox joins
	// a network with no route out but a proxy that lets through only what
	// the list allows, and HTTP_PROXY, HTTPS_PROXY and NO_PROXY (and their
	// lower-case forms) name that proxy. When the proxy stops, commands
	// and file operations fail with ErrEgressStopped.
	Egress []string
	// EgressReport receives every decision of the proxy, in order, and an
	// event with Method egress.Stopped if the proxy stops before the
	// sandbox is closed. It must not block for long.
	EgressReport func(egress.Event)
	// EgressUpstream is the network with a route out the proxy joins;
	// empty means the engine's "bridge".
	EgressUpstream string
	// Memory limit in bytes; swap is set equal to it (no swap). Default 4 GiB.
	// What the agent writes to the workspace, /tmp and its home counts
	// against it too when Disk is on: they live in memory.
	Memory int64
	// Disk caps the writable space. The root filesystem is read-only; the
	// workspace, /tmp, /var/tmp and the home are memory-backed file systems
	// of this size each, so a disk filler gets ENOSPC inside the sandbox and
	// the host's disk is never written. Default 4 GiB. NoDiskLimit turns
	// the limit off: the backend's ordinary storage (for Docker, the
	// container's writable layer on the host's disk) holds everything, with
	// no size limit.
	Disk int64
	// CPUs is the CPU quota in cores. Default 1.
	CPUs float64
	// Pids caps the number of processes. Default 512.
	Pids int64
	// NoFile is the open-files ulimit (soft and hard). Default 4096.
	NoFile int64
	// Lifetime is the longest the sandbox may exist: its PID 1 exits by
	// itself after it, and Cleanup removes it past this deadline even if
	// the runner died. Default 2h.
	Lifetime time.Duration
	// Env adds non-secret KEY=VALUE entries to every command's environment.
	Env []string
	// Workspace is a host directory copied into Workdir at start; empty
	// starts with an empty workspace.
	Workspace string
	// CACerts are PEM certificates the sandbox trusts besides its
	// image's own: the backend installs them in CABundle before Start
	// returns, and every command's environment points the usual tools
	// there (see caEnv).
	CACerts []byte
	// RunID and TaskID label the sandbox so that it can be found and
	// cleaned up; RunID defaults to a random id.
	RunID, TaskID string
}

// NoDiskLimit as Config.Disk turns the disk limit off.
const NoDiskLimit = -1

// UID and GID are the numeric user and group that run every command and
// own the workspace and the files of a snapshot, in every backend.
const (
	UID = 1000
	GID = 1000
)

// Defaults for Config fields left empty.
const (
	DefaultNetwork  = "none"
	DefaultMemory   = 4 << 30
	DefaultDisk     = 4 << 30
	DefaultCPUs     = 1.0
	DefaultPids     = 512
	DefaultNoFile   = 4096
	DefaultLifetime = 2 * time.Hour
	// HomeDir is the sandbox user's home directory.
	HomeDir = "/home/sandbox"
)

// nonInteractiveEnv is the base environment of the sandbox: it keeps tools
// from waiting for a terminal that is not there, and Python from writing
// bytecode caches into the workspace. A task's env comes after it and wins.
var nonInteractiveEnv = []string{
	"HOME=" + HomeDir,
	"PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin",
	"TERM=dumb",
	"NO_COLOR=1",
	"CI=true",
	"PAGER=cat",
	"MANPAGER=cat",
	"GIT_PAGER=cat",
	"LESS=-FRX",
	"EDITOR=true",
	"VISUAL=true",
	"GIT_EDITOR=true",
	"GIT_TERMINAL_PROMPT=0",
	"GIT_ASKPASS=true",
	"SSH_ASKPASS=true",
	"GIT_SSH_COMMAND=ssh -o BatchMode=yes",
	"DEBIAN_FRONTEND=noninteractive",
	"PIP_NO_INPUT=1",
	"PIP_DISABLE_PIP_VERSION_CHECK=1",
	"PYTHONUNBUFFERED=1",
	// No bytecode caches in the workspace: they are build artifacts, not
	// work. Where a task's env turns PYTHONDONTWRITEBYTECODE off, the
	// caches go to /tmp (Python 3.8 and later).
	"PYTHONDONTWRITEBYTECODE=1",
	"PYTHONPYCACHEPREFIX=/tmp/pycache",
	"npm_config_yes=true",
}

// WithDefaults returns c with every empty field set to its default, or an
// error naming the first invalid field. Every backend applies it first.
func (c Config) WithDefaults() (Config, error) {
	if c.Image == "" {
		return c, fmt.Errorf("sandbox config: image is required")
	}
	if c.Network == "" {
		c.Network = DefaultNetwork
	}
	if c.Network != "none" && c.Network != "bridge" {
		return c, fmt.Errorf("sandbox config: network %q: want none or bridge", c.Network)
	}
	if err := c.checkEgress(); err != nil {
		return c, err
	}
	if !validRuntime(c.Runtime) {
		return c, fmt.Errorf("sandbox config: runtime %q: want a name such as runc or runsc", c.Runtime)
	}
	if c.Memory == 0 {
		c.Memory = DefaultMemory
	}
	if c.Disk == 0 {
		c.Disk = DefaultDisk
	}
	if c.CPUs == 0 {
		c.CPUs = DefaultCPUs
	}
	if c.Pids == 0 {
		c.Pids = DefaultPids
	}
	if c.NoFile == 0 {
		c.NoFile = DefaultNoFile
	}
	if c.Lifetime == 0 {
		c.Lifetime = DefaultLifetime
	}
	switch {
	case c.Memory < 6<<20:
		return c, fmt.Errorf("sandbox config: memory %d bytes: want at least 6 MiB", c.Memory)
	case c.Disk < 0 && c.Disk != NoDiskLimit:
		return c, fmt.Errorf("sandbox config: disk %d bytes: want a positive size or NoDiskLimit", c.Disk)
	case c.Disk > 0 && c.Disk < 1<<20:
		return c, fmt.Errorf("sandbox config: disk %d bytes: want at least 1 MiB", c.Disk)
	case c.CPUs < 0.01:
		return c, fmt.Errorf("sandbox config: cpus %g: want at least 0.01", c.CPUs)
	case c.Pids < 8:
		return c, fmt.Errorf("sandbox config: pids %d: want at least 8", c.Pids)
	case c.NoFile < 64:
		return c, fmt.Errorf("sandbox config: nofile %d: want at least 64", c.NoFile)
	case c.Lifetime < time.Second:
		return c, fmt.Errorf("sandbox config: lifetime %s: want at least 1s", c.Lifetime)
	}
	for _, kv := range c.Env {
		if k, _, ok := strings.Cut(kv, "="); !ok || k == "" {
			return c, fmt.Errorf("sandbox config: env entry %q: want KEY=VALUE", kv)
		}
	}
	if c.RunID == "" {
		c.RunID = RandomID()
	}
	return c, nil
}

// validRuntime accepts the names OCI runtimes go by: letters, digits,
// '.', '_' and '-', not starting with a punctuation mark.
func validRuntime(s string) bool {
	for i, c := range s {
		ok := c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || i > 0 && (c == '.' || c == '_' || c == '-')
		if !ok || i >= 64 {
			return false
		}
	}
	return true
}

// CommandEnv is the environment of every command: the non-interactive
// defaults, then the caller's entries, which win.
func (c Config) CommandEnv() []string {
	env := append([]string(nil), nonInteractiveEnv...)
	if len(c.CACerts) > 0 {
		env = append(env, caEnv...)
	}
	return append(env, c.Env...)
}
