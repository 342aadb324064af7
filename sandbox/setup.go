package sandbox

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"
)

// Environments is what a backend offers when it can prepare a task's
// environment before the agent runs: a setup phase with its own network,
// time limit and environment (which may hold secrets), whose result becomes
// the image of the task's sandbox. A backend without it cannot run tasks
// that have setup commands.
type Environments interface {
	// Prepare runs setup.Commands in a sandbox of their own made from
	// setup.Base (the same image, limits and workspace as the task's), and
	// returns the image the task's sandbox starts from. With setup.Key set
	// the result is cached under the key EnvironmentKey computes, and a
	// later Prepare with the same key returns it without running anything;
	// concurrent calls with the same key wait for the one that builds it.
	//
	// A setup command that fails or times out is an *SetupError
	// (ErrSetupFailed); a secret value of setup.Secrets found in what setup
	// left behind is ErrSecretLeft, and nothing is kept. Any other error is
	// the backend's.
	Prepare(ctx context.Context, setup Setup) (Environment, error)

	// Release removes what Prepare made for one task only (an environment
	// that is not cached); it is a no-op for a cached one.
	Release(ctx context.Context, env Environment) error
}

// Setup describes the preparation of one task's environment.
//
// It runs as root, in a writable root filesystem: installing system
// packages is what it is for. Its HOME is HomeDir and its working directory
// Workdir, as for the agent. What it leaves in the filesystem, in HomeDir
// and, of what it adds to Workdir, what Keep selects (by default nothing),
// is what a sandbox started from the Environment's image finds; the
// changes it makes to files already in Workdir are dropped, so a task
// never sees another task's workspace through a cached environment.
type Setup struct {
	// Base is the sandbox the setup starts from: its image, runtime,
	// limits, workspace, run and task ids. Its Network and Egress are not
	// used: Network below is.
	Base Config
	// Commands run one after the other with `sh -c`; the first to fail
	// ends the setup.
	Commands []string
	// Network is the setup's network, "bridge" (the default) or "none".
	Network string
	// Timeout bounds all the commands together; default
	// DefaultSetupTimeout.
	Timeout time.Duration
	// Env adds KEY=VALUE entries to the commands' environment (non-secret
	// values, part of the cache key).
	Env []string
	// SecretEnv adds KEY=VALUE entries whose values are secrets: they
	// reach the setup's commands only, their names (not their values) are
	// part of the cache key, and a value found afterwards anywhere in the
	// environment's files or configuration fails the setup.
	SecretEnv []string
	// Keep selects the entries setup added to Workdir that the environment
	// keeps (relative slash-separated paths; dir is set for directories,
	// and a kept directory is kept whole). Nil keeps none.
	Keep func(path string, dir bool) bool
	// Key is what the workspace contributes to the cache key (a hash of
	// the files the environment depends on); empty means no cache.
	Key string
	// CacheLimit bounds the size of the cache: after a build, the least
	// recently used environments are removed until the rest fit. Zero
	// means DefaultCacheLimit; a negative value turns the bound off.
	CacheLimit int64
}

// EnvironmentCache is what a backend that caches environments offers to
// list and bound its cache.
type EnvironmentCache interface {
	// Environments lists the cached environments, most recently used first.
	Environments(ctx context.Context) ([]CacheEntry, error)
	// PruneEnvironments removes cached environments, least recently used
	// first, until the rest take at most keep bytes (0 removes all); one
	// a running sandbox uses stays. It returns what it removed.
	PruneEnvironments(ctx context.Context, keep int64) ([]CacheEntry, error)
}

// CacheEntry is one cached environment.
type CacheEntry struct {
	Key   string    `json:"key"`
	Image string    `json:"image"`
	Base  string    `json:"base"`
	Size  int64     `json:"size_bytes"` // of what setup added to the base image
	Used  time.Time `json:"last_used"`
	// InUse is set when a sandbox uses it.
	InUse bool `json:"in_use,omitempty"`
}

// Environment is a prepared environment.
type Environment struct {
	// Image is the image a task's sandbox starts from (Config.Image).
	Image string
	// Key is the full cache key; empty when not cached.
	Key string
	// Cached is set when an earlier setup's result was reused and no
	// command ran.
	Cached bool
	// Output interleaves the commands' stdout and stderr, the head and
	// the tail kept when it is longer than DefaultMaxOutput.
	Output string
	// Duration is the time the setup took, the wait for a concurrent
	// build of the same key included.
	Duration time.Duration
}

// Defaults of Setup.
const (
	DefaultSetupTimeout = 20 * time.Minute
	DefaultCacheLimit   = 20 << 30
)

// ErrSetupFailed marks a setup whose command failed; ErrSecretLeft one
// that left a secret value behind.
var (
	ErrSetupFailed = errors.New("setup failed")
	ErrSecretLeft  = errors.New("setup left a secret behind")
)

// SetupError is a setup command that failed or timed out.
type SetupError struct {
	Command  string
	ExitCode int
	TimedOut bool
	// Output is the setup's output so far (capped as Environment.Output).
	Output string
}

func (e *SetupError) Error() string {
	if e.TimedOut {
		return fmt.Sprintf("setup: %q did not finish within the setup timeout", e.Command)
	}
	return fmt.Sprintf("setup: %q exited with code %d", e.Command, e.ExitCode)
}

func (e *SetupError) Unwrap() error { return ErrSetupFailed }

// EnvironmentKey is the cache key of setup on the image whose content id
// is imageID: every backend computes it alike, so that a key names the
// same environment everywhere. Secret values never enter it.
func EnvironmentKey(imageID string, s Setup) string {
	h := sha256.New()
	field := func(name, v string) { fmt.Fprintf(h, "%s %d:%s\n", name, len(v), v) }
	field("format", "runner-environment-1")
	field("image", imageID)
	field("network", s.setupNetwork())
	for _, c := range s.Commands {
		field("command", c)
	}
	env := slices.Clone(s.Env)
	slices.Sort(env)
	for _, kv := range env {
		field("env", kv)
	}
	var names []string
	for _, kv := range s.SecretEnv {
		k, _, _ := strings.Cut(kv, "=")
		names = append(names, k)
	}
	slices.Sort(names)
	for _, n := range names {
		field("secret", n)
	}
	field("workspace", s.Key)
	return hex.EncodeToString(h.Sum(nil))
}

// setupNetwork is s.Network or its default.
func (s Setup) setupNetwork() string {
	if s.Network == "" {
		return "bridge"
	}
	return s.Network
}

// WithDefaults returns s with its defaults applied, or an error naming the
// first invalid field.
func (s Setup) WithDefaults() (Setup, error) {
	s.Network = s.setupNetwork()
	if s.Network != "none" && s.Network != "bridge" {
		return s, fmt.Errorf("setup: network %q: want none or bridge", s.Network)
	}
	if s.Timeout == 0 {
		s.Timeout = DefaultSetupTimeout
	}
	if len(s.Commands) == 0 {
		return s, errors.New("setup: no commands")
	}
	for _, kv := range append(slices.Clip(s.Env), s.SecretEnv...) {
		if k, _, ok := strings.Cut(kv, "="); !ok || k == "" {
			return s, fmt.Errorf("setup: env entry %q: want KEY=VALUE", k)
		}
	}
	base, err := s.Base.WithDefaults()
	if err != nil {
		return s, err
	}
	base.Network, base.Egress = "", nil
	s.Base = base
	return s, nil
}
