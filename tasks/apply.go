package tasks

import (
	"maps"
	"slices"
	"strings"

	"go.yaml.in/yaml/v3"
)

// finish applies the defaults to each task, checks what only the complete
// task can tell (required fields, unique ids and branches) and returns the
// tasks.
func (r *reader) finish(defaults *spec, specs []*spec) []Task {
	if defaults == nil {
		defaults = &spec{}
	}
	tasks := make([]Task, 0, len(specs))
	ids := map[string]*spec{}
	folded := map[string]*spec{}
	branches := newBranchSet()
	maxPrompt := r.maxPrompt(defaults)
	for _, s := range specs {
		a := at{taskID: deref(s.ID)}
		if !s.seen["prompt"] {
			r.loadPromptFile(s, a, maxPrompt)
		}
		t := merge(defaults, s)
		r.mergeAttempts(&t, defaults, s)
		t.Source = Source{File: r.file, Line: s.node.Line}
		r.checkSetup(defaults, s, t, a)
		unique := false
		switch {
		case !s.seen["id"]:
			r.add(s.node, a, "missing id")
		case s.ID == nil:
			// wrong type, already reported
		case ids[t.ID] != nil:
			r.add(s.idNode, a.with("id"), "duplicate id %q (first used on line %d)", t.ID, ids[t.ID].idNode.Line)
		case folded[strings.ToLower(t.ID)] != nil:
			other := folded[strings.ToLower(t.ID)]
			r.add(s.idNode, a.with("id"), "id %q differs only in case from %q on line %d; ids name files and branches, which may be case-insensitive",
				t.ID, *other.ID, other.idNode.Line)
		default:
			ids[t.ID] = s
			folded[strings.ToLower(t.ID)] = s
			unique = true
		}
		switch {
		case !s.seen["prompt"] && !s.seen["prompt_file"]:
			r.add(s.node, a.with("prompt"), "missing prompt")
		case s.seen["prompt"] && s.seen["prompt_file"]:
			r.add(orNode(s.promptNode, s.node), a.with("prompt"), "set prompt or prompt_file, not both")
		case s.Prompt != nil && strings.TrimSpace(*s.Prompt) == "" && s.seen["prompt_file"]:
			r.add(s.promptNode, a.with("prompt_file"), "prompt_file: the file is empty")
		case s.Prompt != nil && strings.TrimSpace(*s.Prompt) == "":
			r.add(s.promptNode, a.with("prompt"), "prompt is empty")
		default:
			r.checkPromptSize(s, a, maxPrompt)
		}
		if !s.seen["repo"] && !defaults.seen["repo"] {
			r.add(s.node, a.with("repo"), "missing repo (set it on the task or in defaults)")
		}
		if unique && t.Branch != "" && CheckBranchName(t.Branch) == nil { // a repeated id is reported once
			if msg := branches.claim(t.Branch, s); msg != "" {
				r.add(orNode(s.branchNode, s.node), a.with("branch"), "%s", msg)
			}
			for k := 1; k <= t.Attempts && t.Attempts > 1; k++ {
				if msg := branches.claim(AttemptBranch(t.Branch, k), s); msg != "" {
					r.add(orNode(s.branchNode, s.node), a.with("attempts"), "attempt %d: %s", k, msg)
				}
			}
		}
		tasks = append(tasks, t)
	}
	return tasks
}

// merge builds the task from its spec, falling back on the defaults for
// every field it leaves unset.
func merge(d, s *spec) Task {
	t := Task{
		ID:           deref(s.ID),
		Repo:         deref(pick(s.Repo, d.Repo)),
		Ref:          deref(pick(s.Ref, d.Ref)),
		Prompt:       deref(s.Prompt),
		Branch:       deref(s.Branch),
		Check:        deref(pick(s.Check, d.Check)),
		CheckRetries: deref(pick(s.CheckRetries, d.CheckRetries)),
		CheckTimeout: deref(pick(s.CheckTimeout, d.CheckTimeout)),
		Image:        deref(pick(s.Image, d.Image)),
		Runtime:      deref(pick(s.Runtime, d.Runtime)),
		Model:        deref(pick(s.Model, d.Model)),
		Provider:     deref(pick(s.Provider, d.Provider)),
		Protocol:     deref(pick(s.Protocol, d.Protocol)),
		BudgetUSD:    deref(pick(s.BudgetUSD, d.BudgetUSD)),
		MaxSteps:     deref(pick(s.MaxSteps, d.MaxSteps)),
		Timeout:      deref(pick(s.Timeout, d.Timeout)),
		Network:      deref(pick(s.Network, d.Network)),
		Allow:        slices.Clone(pickAllow(s, d)),
		Limits: Limits{
			Memory:     deref(pick(s.Memory, d.Memory)),
			Disk:       deref(pick(s.Disk, d.Disk)),
			CommitSize: deref(pick(s.CommitSize, d.CommitSize)),
			CPUs:       deref(pick(s.CPUs, d.CPUs)),
			Pids:       deref(pick(s.Pids, d.Pids)),
		},
		Push:       pick(s.Push, d.Push),
		Policy:     mergePolicy(d, s),
		MCPServers: slices.Clone(deref(pick(s.MCPServers, d.MCPServers))),
		Exclude:    mergeExclude(d, s),
		Delegate:   deref(pick(s.Delegate, d.Delegate)),
		Setup:      mergeSetup(d, s),
	}
	t.Image, t.Build = mergeImage(d, s)
	t.CACerts = slices.Clone(deref(pick(s.CACerts, d.CACerts)))
	if t.Branch == "" && t.ID != "" {
		t.Branch = "agent/" + t.ID
	}
	if t.Network == "" {
		t.Network = NetworkNone
	}
	if d.Env != nil || s.Env != nil {
		t.Env = maps.Clone(d.Env)
		if t.Env == nil {
			t.Env = map[string]string{}
		}
		maps.Copy(t.Env, s.Env)
	}
	if t.Push != nil {
		p := *t.Push // tasks must not share the defaults' pointer
		t.Push = &p
	}
	return t
}

// pickAllow is the allowlist that goes with the network picked: the
// task's when it sets network, else the defaults'.
func pickAllow(s, d *spec) []string {
	if s.Network != nil {
		return s.Allow
	}
	return d.Allow
}

// pick returns the task's value if set, else the default's.
func pick[T any](task, def *T) *T {
	if task != nil {
		return task
	}
	return def
}

func deref[T any](p *T) T {
	var zero T
	if p == nil {
		return zero
	}
	return *p
}

// orNode returns n, or fallback when n is nil.
func orNode(n, fallback *yaml.Node) *yaml.Node {
	if n != nil {
		return n
	}
	return fallback
}
