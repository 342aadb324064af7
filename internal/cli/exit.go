package cli

import (
	"errors"
	"fmt"

	"github.com/runner-dev/runner/gitops"
	"github.com/runner-dev/runner/sandbox"
	"github.com/runner-dev/runner/tasks"
)

// Exit codes of the runner binary.
const (
	// ExitOK: everything asked for was done (for run: every task succeeded).
	ExitOK = 0
	// ExitFailure: an operation failed, or (for run) a task did not succeed.
	ExitFailure = 1
	// ExitUsage: the command line or the configuration is wrong: a bad flag,
	// an invalid task file, no Docker daemon, a missing sandbox image.
	// Nothing was attempted; fixing the setup and running again is the cure.
	ExitUsage = 2
	// ExitInterrupted: stopped by SIGINT or SIGTERM (128 + SIGINT).
	ExitInterrupted = 130
)

// ErrInterrupted is the cause of a context cancelled by SIGINT or SIGTERM.
var ErrInterrupted = errors.New("interrupted")

// UsageError is a mistake on the command line that the flag parser could
// not see, such as two flags that exclude each other. It exits with
// ExitUsage and the command's usage is shown after it.
type UsageError struct{ Err error }

// Usagef returns a *UsageError with a formatted message.
func Usagef(format string, a ...any) error {
	return &UsageError{Err: fmt.Errorf(format, a...)}
}

func (e *UsageError) Error() string { return e.Err.Error() }
func (e *UsageError) Unwrap() error { return e.Err }

// ExitError ends the program with Code. When Err is nil the command has
// already told the user everything, and nothing more is printed.
type ExitError struct {
	Code int
	Err  error
}

func (e *ExitError) Error() string {
	if e.Err == nil {
		return fmt.Sprintf("exit status %d", e.Code)
	}
	return e.Err.Error()
}

func (e *ExitError) Unwrap() error { return e.Err }

// Code maps err to the exit code of the program; nil is ExitOK.
func Code(err error) int {
	var exit *ExitError
	var usage *UsageError
	var invalid *tasks.ValidationError
	switch {
	case err == nil:
		return ExitOK
	case errors.As(err, &exit):
		return exit.Code
	case errors.Is(err, ErrInterrupted):
		return ExitInterrupted
	case errors.As(err, &usage), errors.As(err, &invalid),
		errors.Is(err, sandbox.ErrDaemonUnreachable),
		errors.Is(err, sandbox.ErrImageNotFound),
		errors.Is(err, sandbox.ErrRefused):
		return ExitUsage
	}
	return ExitFailure
}

// Hint returns a line telling the user what to do about err, or "" when
// there is nothing more useful to say than the error itself.
func Hint(err error) string {
	var image *sandbox.ImageError
	switch {
	case err == nil:
		return ""
	case errors.Is(err, sandbox.ErrDaemonUnreachable):
		return "start Docker or set DOCKER_HOST"
	case errors.As(err, &image):
		return image.Advice()
	case errors.Is(err, sandbox.ErrImageNotFound):
		return "run `runner image build`"
	case errors.Is(err, tasks.ErrLocked):
		return "wait for the other run to finish, or choose another --out directory"
	case errors.Is(err, gitops.ErrBranchCheckedOut):
		return "check out another branch in that repository first"
	}
	return ""
}
