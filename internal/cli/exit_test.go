package cli

import (
	"errors"
	"fmt"
	"testing"

	"github.com/runner-dev/runner/gitops"
	"github.com/runner-dev/runner/sandbox"
	"github.com/runner-dev/runner/tasks"
)

func TestCodeAndHint(t *testing.T) {
	tests := []struct {
		name     string
		err      error
		wantCode int
		wantHint string
	}{
		{"nil", nil, ExitOK, ""},
		{"plain failure", errors.New("boom"), ExitFailure, ""},
		{"usage", Usagef("bad %s", "flag"), ExitUsage, ""},
		{"wrapped usage", fmt.Errorf("x: %w", Usagef("bad")), ExitUsage, ""},
		{"invalid task file", fmt.Errorf("load: %w", &tasks.ValidationError{}), ExitUsage, ""},
		{"daemon unreachable", fmt.Errorf("connect: %w at unix:///x", sandbox.ErrDaemonUnreachable), ExitUsage, "start Docker or set DOCKER_HOST"},
		{"default image missing", fmt.Errorf("create: %w", &sandbox.ImageError{Image: sandbox.DefaultImage}), ExitUsage, "build it with `runner image build`"},
		{"other image missing", &sandbox.ImageError{Image: "mine:1"}, ExitUsage, "pull or build it (`docker pull mine:1`), or, for runner's own sandbox image under that name, `runner image build --tag mine:1`"},
		{"bare image not found", sandbox.ErrImageNotFound, ExitUsage, "run `runner image build`"},
		{"engine refuses settings", fmt.Errorf("create: %w", sandbox.ErrRefused), ExitUsage, ""},
		{"out directory locked", fmt.Errorf("open: %w", &tasks.LockedError{Path: "out/.lock"}), ExitFailure,
			"wait for the other run to finish, or choose another --out directory"},
		{"branch checked out", fmt.Errorf("rollback: %w", gitops.ErrBranchCheckedOut), ExitFailure, "check out another branch in that repository first"},
		{"interrupted", fmt.Errorf("%w: %w", ErrInterrupted, errors.New("context canceled")), ExitInterrupted, ""},
		{"explicit code", &ExitError{Code: 7}, 7, ""},
		{"explicit code wins", &ExitError{Code: ExitFailure, Err: sandbox.ErrDaemonUnreachable}, ExitFailure, "start Docker or set DOCKER_HOST"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := Code(tt.err); got != tt.wantCode {
				t.Errorf("Code(%v) = %d, want %d", tt.err, got, tt.wantCode)
			}
			if got := Hint(tt.err); got != tt.wantHint {
				t.Errorf("Hint(%v) = %q, want %q", tt.err, got, tt.wantHint)
			}
		})
	}
}

func TestErrorMessages(t *testing.T) {
	tests := []struct {
		err  error
		want string
	}{
		{Usagef("give %d", 1), "give 1"},
		{&ExitError{Code: 3}, "exit status 3"},
		{&ExitError{Code: 2, Err: errors.New("2 problems")}, "2 problems"},
	}
	for _, tt := range tests {
		if got := tt.err.Error(); got != tt.want {
			t.Errorf("Error() = %q, want %q", got, tt.want)
		}
	}
}
