package agent

import (
	"context"

	"github.com/runner-dev/runner/sandbox"
	"github.com/runner-dev/runner/sandbox/inmem"
)

// memSandbox is the in-memory sandbox of package inmem, answering a command
// with exec when a test sets it, else with "ran: CMD".
type memSandbox struct {
	*inmem.Sandbox
	exec func(cmd string) (sandbox.ExecResult, error)
}

func newMemSandbox(files map[string]string) *memSandbox {
	s := &memSandbox{}
	sb, err := inmem.New(inmem.Options{Files: files, Exec: func(_ context.Context, _ *inmem.Sandbox, cmd string, _ sandbox.ExecOptions) (sandbox.ExecResult, error) {
		if s.exec != nil {
			return s.exec(cmd)
		}
		out := "ran: " + cmd + "\n"
		return sandbox.ExecResult{Stdout: out, Output: out}, nil
	}})
	if err != nil {
		panic(err)
	}
	s.Sandbox = sb
	return s
}

// file is the content of the regular file p, "" if there is none.
func (s *memSandbox) file(p string) string { return s.File(p) }

// commands are the commands run so far, in order.
func (s *memSandbox) commands() []string { return s.Commands() }
