package tasks

import (
	"path/filepath"
	"slices"
	"strings"

	"go.yaml.in/yaml/v3"

	"github.com/runner-dev/runner/internal/policy"
)

// The keys of a task's policy: protected_paths, deny_commands,
// pre_tool_hook and hook_timeout (see policy.Policy).

func decodeProtected(r *reader, v *yaml.Node, a at, s *spec) {
	globs, ok := r.strList(v, a, "globs", policy.CheckPattern)
	if ok {
		s.Protected = &globs
	}
}

func decodeDenyCommands(r *reader, v *yaml.Node, a at, s *spec) {
	rules, ok := r.strList(v, a, "regular expressions", policy.CheckRule)
	if ok {
		s.DenyCommands = &rules
	}
}

func decodeHook(r *reader, v *yaml.Node, a at, s *spec) {
	hook, ok := r.str(v, a)
	if !ok {
		return
	}
	if strings.TrimSpace(hook) == "" {
		r.addField(v, a, "is empty")
		return
	}
	if !filepath.IsAbs(hook) {
		abs, err := filepath.Abs(filepath.Join(r.dir, hook))
		if err != nil {
			r.addField(v, a, "%v", err)
			return
		}
		hook = abs
	}
	if err := policy.CheckHookPath(hook); err != nil {
		r.addField(v, a, "%v", err)
		return
	}
	s.Hook = &hook
}

func decodeHookTimeout(r *reader, v *yaml.Node, a at, s *spec) {
	if d, ok := r.duration(v, a); ok {
		s.HookTimeout = &d
	}
}

// strList decodes a list of strings, reporting each item that check
// refuses at the item's own line. what names the items in type errors. ok
// is false for null, a wrong type or a refused item.
func (r *reader) strList(n *yaml.Node, a at, what string, check func(string) error) ([]string, bool) {
	if n.Kind == yaml.ScalarNode && isNull(n) {
		return nil, false
	}
	if n.Kind != yaml.SequenceNode {
		r.addField(n, a, "want a list of %s, got %s", what, describe(n))
		return nil, false
	}
	items := make([]string, 0, len(n.Content))
	ok := true
	for _, item := range n.Content {
		item = resolve(item)
		if item.Kind != yaml.ScalarNode || isNull(item) {
			r.addField(item, a, "want a list of %s, got %s in it", what, describe(item))
			ok = false
			continue
		}
		if err := check(item.Value); err != nil {
			r.addField(item, a, "%v", err)
			ok = false
			continue
		}
		items = append(items, item.Value)
	}
	return items, ok
}

// mergePolicy builds a task's policy from its spec and the defaults. Unset
// protected_paths means policy.DefaultProtected; an empty list, none.
func mergePolicy(d, s *spec) policy.Policy {
	protected := policy.DefaultProtected
	if p := pick(s.Protected, d.Protected); p != nil {
		protected = *p
	}
	return policy.Policy{
		Protected:    slices.Clone(protected),
		DenyCommands: slices.Clone(deref(pick(s.DenyCommands, d.DenyCommands))),
		Hook:         deref(pick(s.Hook, d.Hook)),
		HookTimeout:  deref(pick(s.HookTimeout, d.HookTimeout)),
	}
}
