package channel

import (
	"errors"
	"fmt"
	"io/fs"

	"github.com/runner-dev/runner/sandbox"
)

// Protocol names the protocol in the helper's hello, and Version its
// version. The host refuses a helper that speaks another: the channel is
// not used, and commands run one exec each.
const (
	Protocol = "runner-channel"
	Version  = 2
)

// Hello is the helper's first frame.
type Hello struct {
	Protocol string `json:"protocol"`
	Version  int    `json:"version"`
	PID      int    `json:"pid"` // the helper's process id, inside the sandbox
}

// Operations of a Request.
const (
	OpExec   = "exec"   // run Cmd with the command wrapper
	OpRead   = "read"   // read the regular file Path
	OpWrite  = "write"  // replace the content of Path with Data
	OpList   = "list"   // list Path, recursively if Recursive
	OpTar    = "tar"    // stream a tar of the workspace as KindData frames
	OpCancel = "cancel" // end request Target early (an exec: as at its timeout)
)

// Request is one operation asked by the host. Paths are absolute and
// inside sandbox.Workdir (the host checks them lexically; the helper checks
// what it opened).
type Request struct {
	Op string `json:"op"`
	// exec
	Cmd       string   `json:"cmd,omitempty"`
	Env       []string `json:"env,omitempty"`
	Dir       string   `json:"dir,omitempty"`
	Mark      string   `json:"mark,omitempty"` // cmdwrap.NewMark's, checked by cmdwrap.ValidMark
	TimeoutNS int64    `json:"timeout_ns,omitempty"`
	MaxOutput int      `json:"max_output,omitempty"`
	// read, write, list
	Path      string      `json:"path,omitempty"`
	Data      []byte      `json:"data,omitempty"`
	Mode      fs.FileMode `json:"mode,omitempty"`
	Recursive bool        `json:"recursive,omitempty"`
	// cancel
	Target uint32 `json:"target,omitempty"`
}

// Reply ends a request. Error is set when the operation failed; its Code
// names the sandbox package's error it stands for.
type Reply struct {
	Exec  *sandbox.ExecResult `json:"exec,omitempty"`
	Data  []byte              `json:"data,omitempty"`
	Files []sandbox.FileInfo  `json:"files,omitempty"`
	Error *Error              `json:"error,omitempty"`
}

// Error is a failed operation, as it travels.
type Error struct {
	Code    string `json:"code"`
	Message string `json:"message"`
}

// Error codes, and the errors they stand for on the host.
var codes = map[string]error{
	"not_found":  sandbox.ErrNotFound,
	"is_dir":     sandbox.ErrIsDir,
	"not_dir":    sandbox.ErrNotDir,
	"not_reg":    sandbox.ErrNotRegular,
	"too_large":  sandbox.ErrTooLarge,
	"outside":    sandbox.ErrOutsideWorkspace,
	"permission": fs.ErrPermission,
}

// toError makes err travel.
func toError(err error) *Error {
	for code, e := range codes {
		if errors.Is(err, e) {
			return &Error{Code: code, Message: err.Error()}
		}
	}
	return &Error{Code: "other", Message: err.Error()}
}

// remoteError is an Error as the host sees it: errors.Is matches the
// sandbox package's error its code names.
type remoteError struct{ e Error }

func (r *remoteError) Error() string { return r.e.Message }
func (r *remoteError) Unwrap() error { return codes[r.e.Code] }

func (e *Error) err() error {
	if e == nil {
		return nil
	}
	if _, ok := codes[e.Code]; !ok && e.Code != "other" {
		return fmt.Errorf("%s (error code %q)", e.Message, e.Code)
	}
	return &remoteError{*e}
}
