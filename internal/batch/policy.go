package batch

import (
	"slices"

	"github.com/runner-dev/runner/internal/policy"
)

// withPolicy adds the run's policy to a task's: the run's protected paths
// and deny rules are added to the task's (which the task file cannot take
// away), and its hook and hook timeout apply to tasks that set none.
func withPolicy(task, run policy.Policy) policy.Policy {
	task.Protected = union(task.Protected, run.Protected)
	task.DenyCommands = union(task.DenyCommands, run.DenyCommands)
	if task.Hook == "" {
		task.Hook = run.Hook
	}
	if task.HookTimeout == 0 {
		task.HookTimeout = run.HookTimeout
	}
	return task
}

// union returns a new list of a's items followed by those of b not in a.
func union(a, b []string) []string {
	out := slices.Clone(a)
	for _, s := range b {
		if !slices.Contains(out, s) {
			out = append(out, s)
		}
	}
	return out
}
