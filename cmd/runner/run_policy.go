package main

import (
	"path/filepath"

	"github.com/spf13/cobra"

	"github.com/runner-dev/runner/internal/cli"
	"github.com/runner-dev/runner/internal/policy"
)

// policyFlags add to the policy of every task of a run.
type policyFlags struct {
	protect      []string
	denyCommands []string
	hook         string
	// policy is what the flags add, once complete has checked them.
	policy policy.Policy
}

func (p *policyFlags) register(cmd *cobra.Command) {
	f := cmd.Flags()
	// StringArray, not StringSlice: globs and regular expressions may hold commas.
	f.StringArrayVar(&p.protect, "protect", nil,
		"also protect paths matching `GLOB` from the agent, on top of the defaults and the task file's (repeatable)")
	f.StringArrayVar(&p.denyCommands, "deny-command", nil,
		"refuse run_command calls whose command line matches the Go `REGEX` (repeatable)")
	f.StringVar(&p.hook, "pre-tool-hook", "",
		"host `PATH` of an executable asked about every tool call, for tasks that set none (the call as JSON on stdin; exit 2 refuses)")
}

// complete checks the flags, all problems at once, and resolves the hook
// against the working directory.
func (p *policyFlags) complete() error {
	p.policy = policy.Policy{Protected: p.protect, DenyCommands: p.denyCommands}
	if p.hook != "" {
		abs, err := filepath.Abs(p.hook)
		if err != nil {
			return cli.Usagef("--pre-tool-hook: %v", err)
		}
		p.policy.Hook = abs
	}
	if err := p.policy.Validate(); err != nil {
		return cli.Usagef("%v", err)
	}
	return nil
}
