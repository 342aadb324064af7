// Package sandbox runs an agent's commands and file operations inside a
// hardened, disposable container, and hands the resulting workspace back as a
// tar stream. Nothing here touches git or the host's copy of the workspace.
package sandbox

import (
	"context"
	"errors"
	"io"
	"io/fs"
	"time"
)

// Workdir is where the workspace lives inside every sandbox.
const Workdir = "/workspace"

// Sandbox is an isolated place to run commands against a workspace.
//
// Paths given to the file methods are relative to Workdir (or absolute paths
// inside it); a path that leaves the workspace, directly or through a symlink,
// is refused with ErrOutsideWorkspace.
type Sandbox interface {
	// Exec runs cmd with `sh -c` in Workdir, with no stdin and no TTY.
	// err reports an infrastructure failure only: a non-zero exit, a timeout
	// or truncated output are reported in the result.
	Exec(ctx context.Context, cmd string, opt ExecOptions) (ExecResult, error)

	// ReadFile returns the whole content of a regular file, following
	// symlinks that stay inside the workspace. It fails with ErrNotFound,
	// ErrIsDir, ErrNotRegular (a FIFO, a device), ErrTooLarge (files over
	// MaxReadSize) or fs.ErrPermission. It is race-free: what is checked is
	// the file actually read, whatever the sandbox's processes do meanwhile.
	ReadFile(ctx context.Context, path string) ([]byte, error)

	// WriteFile writes data (binary-safe) with the given mode, as the
	// sandbox user, creating missing parent directories. A mode of 0 keeps
	// the mode of the file it replaces, or 0644 for a new file. It fails
	// with ErrIsDir, ErrNotDir, ErrNotRegular or fs.ErrPermission, and, like
	// ReadFile, checks the file actually written, before writing it.
	WriteFile(ctx context.Context, path string, data []byte, mode fs.FileMode) error

	// ListFiles lists the entries under dir (recursively if asked), sorted,
	// relative to the workspace; the contents of .git directories are left out.
	ListFiles(ctx context.Context, dir string, recursive bool) ([]FileInfo, error)

	// Snapshot freezes the sandbox, so that nothing can change the workspace
	// while it is copied, and returns a tar stream of Workdir whose entry
	// names are relative to it ("./", "./src/main.go"). After Snapshot the
	// sandbox accepts no more Exec calls; Snapshot may be called again.
	Snapshot(ctx context.Context) (io.ReadCloser, error)

	// Close removes the sandbox and everything in it. It is idempotent and
	// safe to call with an already cancelled context.
	Close(ctx context.Context) error
}

// ExecOptions tunes one Exec call. The zero value gives the defaults.
type ExecOptions struct {
	// Timeout bounds the command's wall time, enforced inside the sandbox:
	// when it expires every process of the command is killed. Zero means
	// DefaultExecTimeout.
	Timeout time.Duration
	// MaxOutput caps the bytes kept of each of stdout, stderr and the
	// combined view; the head and the tail are kept. Zero means
	// DefaultMaxOutput.
	MaxOutput int
	// Env adds KEY=VALUE entries to the command's environment.
	Env []string
	// Dir is the working directory, relative to Workdir.
	Dir string
}

// ExecResult is what a command did. A non-zero ExitCode or TimedOut is an
// observation about the command, not a failure of the sandbox.
type ExecResult struct {
	ExitCode int    `json:"exit_code"`
	Stdout   string `json:"stdout"`
	Stderr   string `json:"stderr"`
	// Output interleaves stdout and stderr in the order they arrived.
	Output   string `json:"output"`
	TimedOut bool   `json:"timed_out,omitempty"`
	// OOMKilled is set when the kernel killed a process of the sandbox for
	// using more memory than the limit while the command ran.
	OOMKilled bool `json:"oom_killed,omitempty"`
	// Truncated is set when any stream went over MaxOutput; Dropped counts
	// the bytes cut from the middle of the combined view.
	Truncated bool  `json:"truncated,omitempty"`
	Dropped   int64 `json:"dropped_bytes,omitempty"`
	// Detached is set when the command exited but a process it left behind
	// kept the output open; output written after the drain period is lost.
	Detached bool          `json:"detached,omitempty"`
	Duration time.Duration `json:"duration_ns"`
	// Notice is a word from the backend about how the sandbox runs
	// commands that the agent should hear, such as a fallback to a slower
	// way after the sandbox's command channel ended; empty as a rule.
	Notice string `json:"notice,omitempty"`
}

// FileInfo is one entry of ListFiles.
type FileInfo struct {
	Path string      `json:"path"` // relative to Workdir, slash-separated
	Type fs.FileMode `json:"type"` // 0 for a regular file, fs.ModeDir, fs.ModeSymlink, ...
	Size int64       `json:"size"`
}

// Defaults for ExecOptions and the file methods.
const (
	DefaultExecTimeout = 2 * time.Minute
	DefaultMaxOutput   = 64 << 10
	MaxReadSize        = 8 << 20
)

// Errors callers branch on.
var (
	ErrNotFound         = errors.New("no such file or directory")
	ErrIsDir            = errors.New("is a directory")
	ErrNotDir           = errors.New("not a directory")
	ErrNotRegular       = errors.New("not a regular file")
	ErrTooLarge         = errors.New("file too large")
	ErrOutsideWorkspace = errors.New("path is outside the workspace")
	ErrStopped          = errors.New("sandbox is stopped")
	ErrClosed           = errors.New("sandbox is closed")
)
