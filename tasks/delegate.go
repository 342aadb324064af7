package tasks

import (
	"go.yaml.in/yaml/v3"
)

// Delegate is the task's delegate key: whether the agent may hand
// subtasks to sub-agents, and within what. Its zero value offers none.
type Delegate struct {
	// MaxDepth is how deeply sub-agents nest: 1 lets the agent delegate,
	// not its sub-agents; 0 turns delegation off.
	MaxDepth int
	// MaxSteps caps one sub-agent's model calls; 0 is the agent's
	// default. A sub-agent's calls count against the task's max_steps.
	MaxSteps int
}

// Bounds of the delegate key.
const (
	DefaultDelegateDepth = 1
	MaxDelegateDepth     = 3
)

// delegateFields are the keys of delegate.
var delegateFields = []field{
	{"max_depth", false, func(r *reader, v *yaml.Node, a at, s *spec) {
		if n, ok := r.integer(v, a); ok {
			if n < 0 || n > MaxDelegateDepth {
				r.addField(v, a, "want 0 (off) to %d, got %d", MaxDelegateDepth, n)
				return
			}
			s.Delegate.MaxDepth = int(n)
		}
	}},
	{"max_steps", false, func(r *reader, v *yaml.Node, a at, s *spec) {
		if n, ok := r.integer(v, a); ok {
			if n < 1 {
				r.addField(v, a, "must be positive, got %d", n)
				return
			}
			s.Delegate.MaxSteps = int(n)
		}
	}},
}

// decodeDelegate decodes delegate: a mapping of max_depth (default 1)
// and max_steps, or true/false.
func decodeDelegate(r *reader, v *yaml.Node, a at, s *spec) {
	v = resolve(v)
	if isNull(v) {
		return
	}
	if v.Kind == yaml.ScalarNode && v.ShortTag() == "!!bool" {
		if on, ok := r.boolean(v, a); ok {
			d := Delegate{}
			if on {
				d.MaxDepth = DefaultDelegateDepth
			}
			s.Delegate = &d
		}
		return
	}
	if v.Kind != yaml.MappingNode {
		r.addField(v, a, "want true, false or a mapping of max_depth and max_steps, got %s", describe(v))
		return
	}
	s.Delegate = &Delegate{MaxDepth: DefaultDelegateDepth}
	r.decodeKeys(v, a, delegateFields, false, s)
}
