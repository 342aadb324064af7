package sandbox

import (
	"context"
	"errors"
	"io"
)

// Backend makes sandboxes of one kind (containers of a Docker engine, ...)
// and looks after what they leave behind. Everything a backend needs to
// know of a run reaches it through Config; nothing else of runner reaches
// into it.
type Backend interface {
	// Start creates a sandbox from cfg, with the defaults of
	// Config.WithDefaults, copies cfg.Workspace into Workdir, and returns it
	// ready for Exec. The sandbox labels itself with cfg.RunID and TaskID
	// and with the backend's owner record, so that Cleanup and RemoveRun can
	// find it without any state outside the backend. If Start fails, nothing
	// it created is left behind. A missing image is an *ImageError
	// (ErrImageNotFound); settings the backend cannot apply, such as a
	// Runtime it does not have, are ErrRefused.
	Start(ctx context.Context, cfg Config) (Sandbox, error)

	// CheckImage returns nil when a sandbox can start from image ref, an
	// *ImageError (ErrImageNotFound) when the backend does not have it, and
	// any other error when it cannot tell.
	CheckImage(ctx context.Context, ref string) error

	// Cleanup removes the sandboxes of runs that are over: their owner
	// process is dead, their deadline (Config.Lifetime) has passed, or, for
	// a stopped one, their labels are damaged. It never touches a live
	// run's (an owner on another host counts as live until the deadline).
	// With dryRun it removes nothing and lists in Removed what it would
	// remove.
	Cleanup(ctx context.Context, dryRun bool) (CleanupReport, error)

	// RemoveRun removes every sandbox of run runID, whatever its state: a
	// run's own last step, and what a rerun does for a run it knows is over.
	RemoveRun(ctx context.Context, runID string) (CleanupReport, error)

	// Build makes an image from a Dockerfile alone, or fails with
	// ErrUnsupported where the backend cannot build images.
	Build(ctx context.Context, opt BuildOptions) error

	// Info describes the backend, for `runner doctor` and the logs.
	Info(ctx context.Context) (Info, error)

	// Close releases the backend's connection; sandboxes keep running.
	Close() error
}

// ErrUnsupported is what a backend returns for an operation it does not
// offer.
var ErrUnsupported = errors.New("not supported by this sandbox backend")

// BuildOptions describe an image build from a Dockerfile alone (no other
// files in the build context).
type BuildOptions struct {
	Dockerfile []byte
	Tag        string            // default DefaultImage
	Args       map[string]string // build arguments, e.g. BASE_IMAGE
	// Progress receives the build's output; nil discards it.
	Progress io.Writer
}

// Info describes a backend.
type Info struct {
	// Kind names the backend ("docker").
	Kind string
	// Address is where it is reached (a socket, a URL).
	Address string
	// Version is the backend's own version, when it tells.
	Version string
	// Runtimes are the isolation runtimes Config.Runtime may name, and
	// DefaultRuntime the one an empty Runtime means.
	Runtimes       []string
	DefaultRuntime string
}
