package tasks

import (
	"strings"
	"time"

	"github.com/runner-dev/runner/internal/policy"
)

// Network is the network mode of a task's sandbox.
type Network string

// The network modes a task may ask for.
const (
	// NetworkNone gives the sandbox a loopback interface only (the default).
	NetworkNone Network = "none"
	// NetworkBridge gives the sandbox outbound access through Docker's bridge.
	NetworkBridge Network = "bridge"
	// NetworkAllowlist lets the sandbox reach only the hosts of Task.Allow,
	// through runner's egress proxy (network: {allow: [...]} in the file).
	NetworkAllowlist Network = "allowlist"
)

// Limits are the resource caps of a task's sandbox. A zero field means the
// file did not set it and the sandbox default applies.
type Limits struct {
	// Memory is the memory cap in bytes (written "2g", "512m" in the file).
	Memory int64
	// Disk caps the sandbox's writable space in bytes; -1 ("off" in the
	// file) turns the limit off.
	Disk int64
	// CommitSize caps the bytes of new content (blob sizes as stored in
	// the tree, uncompressed) the task's commit may add to the
	// repository; zero means gitops.DefaultMaxCommitSize.
	CommitSize int64
	// CPUs is the CPU quota in cores, e.g. 1.5.
	CPUs float64
	// Pids caps the number of processes.
	Pids int64
}

// Source is where a task was written.
type Source struct {
	File string
	Line int
}

// Task is one unit of work, with the file's defaults already applied.
//
// A zero value in Model, Provider, Image, BudgetUSD, MaxSteps, Timeout, CheckTimeout
// or Limits means that neither the task nor the defaults set it, and the
// run's configuration decides.
type Task struct {
	// ID names the task in results, state files and the default branch.
	// It matches [A-Za-z0-9][A-Za-z0-9._-]* (see CheckID).
	ID string
	// Repo is a URL (https://, ssh://, git@host:path, file://) or a local
	// path; a relative path has been resolved against the task file's
	// directory.
	Repo string
	// Ref is the branch, tag or commit to start from; empty means the
	// repository's default branch (HEAD).
	Ref string
	// Prompt is what the agent is asked to do; never empty.
	Prompt string
	// Branch receives the result; it defaults to "agent/<id>" and is a
	// valid branch name (see CheckBranchName).
	Branch string
	// Check is a shell command run in the sandbox after the agent finishes;
	// exit status 0 means the task succeeded. Empty means no check.
	Check string
	// CheckRetries is how many more times the agent may try after a failing
	// check, seeing its output; 0 means one attempt only.
	CheckRetries int
	// CheckTimeout bounds one run of Check.
	CheckTimeout time.Duration
	// Image is the sandbox's container image.
	Image string
	// Runtime is the sandbox's isolation runtime ("runc", "runsc" for
	// gVisor); empty means the run's, else the engine's default.
	Runtime string
	// Model is the model name sent to the model endpoint.
	Model string
	// Provider names the service behind the model endpoint, whose request
	// rules apply (see internal/provider); empty means the run's.
	Provider string
	// Protocol is how the model is offered tools: one of Protocols;
	// empty means the run's (see protocol.go).
	Protocol string
	// BudgetUSD caps what the task may spend on model calls.
	BudgetUSD float64
	// MaxSteps caps the number of agent steps (model calls).
	MaxSteps int
	// Timeout caps the task's wall-clock time, check included.
	Timeout time.Duration
	// Network is NetworkNone unless the file asks for NetworkBridge or
	// gives an allowlist (NetworkAllowlist).
	Network Network
	// Allow is the egress allowlist when Network is NetworkAllowlist:
	// host names or *.domain, each with an optional :port (see package
	// egress), validated at load time.
	Allow []string
	// Limits are the sandbox's resource caps.
	Limits Limits
	// Env holds non-secret environment variables for the sandbox; defaults
	// and task entries are merged, the task's winning. Values that look like
	// credentials are refused at load time: secrets never enter the sandbox.
	Env map[string]string
	// Push is nil when the file leaves it unset; see ShouldPush.
	Push *bool
	// Policy is what the agent may not do: protected_paths (default
	// policy.DefaultProtected; [] for none), deny_commands, pre_tool_hook
	// (an absolute path, resolved against the task file's directory and
	// checked to be executable) and hook_timeout. Each key set on the task
	// replaces the defaults' value.
	Policy policy.Policy
	// MCPServers are the servers of host tools the agent may call, by name;
	// the task's mcp_servers replaces the defaults' (see MCPServer).
	MCPServers []MCPServer
	// Exclude are gitignore patterns for untracked build and cache
	// artifacts the commit leaves out, read as git reads core.excludesFile
	// (see gitops.CommitOptions.Exclude); DefaultExclude unless the task
	// or the defaults set exclude ([] for none, replacing the defaults'
	// list whole).
	Exclude []string
	// Delegate lets the agent hand subtasks to sub-agents; off unless
	// the task or the defaults set delegate.
	Delegate Delegate
	// Build, when set, makes the sandbox's image from the repository
	// (image: dockerfile:PATH or image: devcontainer); Image is then
	// empty.
	Build *ImageBuild `json:",omitempty"`
	// CACerts are PEM certificates (ca_certs, read and checked at load
	// time) the sandbox trusts besides its image's own, for setup and
	// agent alike.
	CACerts []byte `json:",omitempty"`
	// Setup prepares the environment before the agent runs; see Setup.
	Setup Setup
	// Attempts is how many independent agents work on the task, each in
	// its own sandbox, on its own branch (AttemptBranch); 0 (unset) or 1
	// runs it once, on Branch. Pick chooses the passing attempt whose
	// commit Branch gets ("" is PickFirst); StopOnSuccess, nil when unset,
	// is read through StopsOnSuccess.
	Attempts      int
	Pick          Pick
	StopOnSuccess *bool
	// Try is set by a run on the copy of a best-of-n task one of its
	// attempts works on: its number, 1 to Attempts, with Branch its
	// attempt branch. It is 0 otherwise and never read from a file.
	Try int
	// Source is where the task was written.
	Source Source
}

// ShouldPush reports whether the result branch of t goes to the remote, given
// whether the task succeeded. Only a URL repository is pushed to (a local
// repository already holds the branch). When the file says push: true or
// false that decides — push: true pushes partial work too, marked as such in
// its commit; when unset, only a task that succeeded is pushed.
func (t Task) ShouldPush(succeeded bool) bool {
	if !IsRemote(t.Repo) {
		return false
	}
	if t.Push != nil {
		return *t.Push
	}
	return succeeded
}

// IsRemote reports whether repo is a URL ("scheme://..." or the scp-like
// "user@host:path") rather than a local path.
func IsRemote(repo string) bool {
	if strings.Contains(repo, "://") {
		return true
	}
	// scp-like syntax: a colon before any slash, as git decides.
	colon := strings.IndexByte(repo, ':')
	slash := strings.IndexByte(repo, '/')
	return colon > 0 && (slash < 0 || colon < slash)
}

// Format is the syntax of a task file.
type Format string

// The task file syntaxes.
const (
	FormatYAML  Format = "yaml"
	FormatJSONL Format = "jsonl"
)

// The sandbox backends a task file's defaults may name (backend:).
const (
	BackendDocker     = "docker"
	BackendKubernetes = "kubernetes"
)

// Backends are the values of backend:.
var Backends = []string{BackendDocker, BackendKubernetes}

// Queue is a loaded task file.
type Queue struct {
	// File is the name the file was loaded under.
	File   string
	Format Format
	// Backend is the sandbox backend the file's defaults ask for (one of
	// Backends), empty when they name none; BackendLine is where.
	Backend     string
	BackendLine int
	// Tasks are in file order, defaults applied.
	Tasks []Task
}
