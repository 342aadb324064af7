package tasks

import (
	"errors"
	"fmt"
	"maps"
	"os"
	"path"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"time"

	"go.yaml.in/yaml/v3"
)

// Setup prepares a task's environment before the agent runs: its
// commands run once, as root, with their own network, time limit and
// environment, and the result is cached by content (see
// sandbox.Environments). The agent then runs with the task's network.
type Setup struct {
	// Commands are shell commands run in order; the first to fail ends
	// the task as setup_failed. Empty means no setup (setup: [] on a task
	// turns the defaults' off).
	Commands []string
	// Network is the setup's network: NetworkBridge (the default) or
	// NetworkNone.
	Network Network
	// Timeout bounds all the commands; default DefaultSetupTimeout.
	Timeout time.Duration
	// Env holds non-secret variables of the setup (part of the cache key).
	Env map[string]string
	// HostEnv maps a variable of the setup to the host variable it is read
	// from at run time ("NAME: ${HOST_NAME}" in the file): a secret, such
	// as a private registry's token, that reaches the setup only and is
	// redacted everywhere. Its name, not its value, is part of the key.
	HostEnv map[string]string
	// CacheKey are the repository files (lockfiles: go.sum,
	// package-lock.json, poetry.lock) whose content keys the cache, with
	// the image and the setup itself; empty means the whole base tree.
	CacheKey []string
	// NoCache turns the cache off (setup_cache: false): the setup runs for
	// every task and its result is removed after it.
	NoCache bool
}

// DefaultSetupTimeout bounds a setup that sets no setup_timeout.
const DefaultSetupTimeout = 20 * time.Minute

// setupSpec holds the setup keys of a task or the defaults, as written.
type setupSpec struct {
	Commands     *[]string
	Network      *Network
	Timeout      *time.Duration
	Env, HostEnv map[string]string
	envSet       bool
	CacheKey     *[]string
	cacheKeyNode *yaml.Node
	Cache        *bool
}

// hostRef is how setup_env names a host variable: ${NAME}.
var hostRef = regexp.MustCompile(`^\$\{([A-Za-z_][A-Za-z0-9_]*)\}$`)

var setupFields = []field{
	{"setup", false, func(r *reader, v *yaml.Node, a at, s *spec) {
		var cmds []string
		if v.Kind == yaml.ScalarNode {
			c, ok := r.str(v, a)
			if !ok {
				return
			}
			cmds = []string{c}
		} else {
			var ok bool
			if cmds, ok = r.strList(v, a, "shell commands", checkCommand); !ok {
				return
			}
		}
		if v.Kind == yaml.ScalarNode && strings.TrimSpace(cmds[0]) == "" {
			r.addField(v, a, "is empty: give a shell command, a list of them, or [] for none")
			return
		}
		s.Setup.Commands = &cmds
	}},
	{"setup_network", false, func(r *reader, v *yaml.Node, a at, s *spec) {
		if n, ok := r.str(v, a); ok {
			if n != string(NetworkNone) && n != string(NetworkBridge) {
				r.addField(v, a, "want none or bridge, got %q", n)
				return
			}
			nw := Network(n)
			s.Setup.Network = &nw
		}
	}},
	{"setup_timeout", false, func(r *reader, v *yaml.Node, a at, s *spec) {
		if d, ok := r.duration(v, a); ok {
			s.Setup.Timeout = &d
		}
	}},
	{"setup_env", false, decodeSetupEnv},
	{"cache_key", false, func(r *reader, v *yaml.Node, a at, s *spec) {
		files, ok := r.strList(v, a, "repository files", checkCacheKeyPath)
		if ok {
			s.Setup.CacheKey, s.Setup.cacheKeyNode = &files, v
		}
	}},
	{"setup_cache", false, func(r *reader, v *yaml.Node, a at, s *spec) {
		if b, ok := r.boolean(v, a); ok {
			s.Setup.Cache = &b
		}
	}},
}

func init() { taskFields = append(taskFields, setupFields...) }

func checkCommand(c string) error {
	if strings.TrimSpace(c) == "" {
		return errors.New("an empty command")
	}
	return nil
}

// checkCacheKeyPath accepts a clean path relative to the repository root.
func checkCacheKeyPath(p string) error {
	if p == "" || path.IsAbs(p) || path.Clean(p) != p || p == ".." || strings.HasPrefix(p, "../") || strings.Contains(p, "\\") {
		return fmt.Errorf("%q: want a path relative to the repository root, such as go.sum or web/package-lock.json", p)
	}
	return nil
}

func decodeSetupEnv(r *reader, v *yaml.Node, a at, s *spec) {
	v = resolve(v)
	if isNull(v) {
		return
	}
	if v.Kind != yaml.MappingNode {
		r.addField(v, a, "want a mapping of NAME: value or NAME: ${HOST_VARIABLE}, got %s", describe(v))
		return
	}
	env, host := map[string]string{}, map[string]string{}
	for _, p := range r.pairs(v, a) {
		key, val := p.key.Value, resolve(p.value)
		ka := a.with(key)
		if err := checkEnvKey(key); err != nil {
			r.add(p.key, ka, "setup_env: %v", err)
			continue
		}
		text, ok := r.str(val, ka)
		if !ok {
			continue
		}
		if m := hostRef.FindStringSubmatch(text); m != nil {
			host[key] = m[1]
			continue
		}
		if strings.Contains(text, "${") {
			r.addField(val, ka, "write ${NAME} alone to read the host's variable NAME, got %q", text)
			continue
		}
		env[key] = text
	}
	s.Setup.Env, s.Setup.HostEnv, s.Setup.envSet = env, host, true
}

// mergeSetup builds a task's setup from its spec and the defaults; each key
// set on the task replaces the defaults' value.
func mergeSetup(d, s *spec) Setup {
	t := Setup{
		Commands: slices.Clone(deref(pick(s.Setup.Commands, d.Setup.Commands))),
		Network:  deref(pick(s.Setup.Network, d.Setup.Network)),
		Timeout:  deref(pick(s.Setup.Timeout, d.Setup.Timeout)),
		CacheKey: slices.Clone(deref(pick(s.Setup.CacheKey, d.Setup.CacheKey))),
	}
	if p := pick(s.Setup.Cache, d.Setup.Cache); p != nil {
		t.NoCache = !*p
	}
	if len(t.Commands) == 0 {
		return Setup{}
	}
	env := &d.Setup
	if s.Setup.envSet {
		env = &s.Setup
	}
	if len(env.Env) > 0 {
		t.Env = maps.Clone(env.Env)
	}
	if len(env.HostEnv) > 0 {
		t.HostEnv = maps.Clone(env.HostEnv)
	}
	if t.Network == "" {
		t.Network = NetworkBridge
	}
	if t.Timeout == 0 {
		t.Timeout = DefaultSetupTimeout
	}
	return t
}

// checkSetup reports what only the complete task can tell: setup keys
// without setup commands, and cache_key files missing from a local
// repository's working tree (a URL's are checked after the clone).
func (r *reader) checkSetup(d, s *spec, t Task, a at) {
	if len(t.Setup.Commands) == 0 && !s.seen["setup"] && !d.seen["setup"] {
		for _, key := range []string{"setup_network", "setup_timeout", "setup_env", "cache_key", "setup_cache"} {
			if s.seen[key] {
				r.add(s.node, a.with(key), "%s is set but the task has no setup commands (setup)", key)
			}
		}
		return
	}
	node := s.Setup.cacheKeyNode
	if node == nil {
		node = d.Setup.cacheKeyNode
	}
	if node == nil || t.Repo == "" || IsRemote(t.Repo) {
		return
	}
	if _, err := os.Stat(t.Repo); err != nil {
		return // a repository not on this machine is checked after its clone
	}
	for _, f := range t.Setup.CacheKey {
		if _, err := os.Lstat(filepath.Join(t.Repo, filepath.FromSlash(f))); err != nil {
			r.add(node, a.with("cache_key"), "cache_key: %s does not exist in %s", f, t.Repo)
		}
	}
}

// SetupResult is the account of a task's setup phase in its result.
type SetupResult struct {
	// Cached is set when an earlier task's environment was reused and no
	// setup command ran.
	Cached bool `json:"cached"`
	// Duration is the setup's time, the wait for a concurrent build of the
	// same environment included.
	Duration Duration `json:"duration"`
	// Key is the environment's cache key; empty with setup_cache: false.
	Key string `json:"key,omitempty"`
}
