package tasks

import (
	"context"
	"fmt"
	"math"
	"strconv"
	"time"

	"go.yaml.in/yaml/v3"
)

// reader collects the problems of one task file while decoding it.
type reader struct {
	// ctx stops the reading of prompt files.
	ctx  context.Context
	file string
	// dir is the directory that relative repo paths and prompt files are
	// resolved against.
	dir      string
	problems []Problem
}

// at locates a value for problem reports: the task it belongs to and its
// dotted key.
type at struct {
	taskID string
	field  string
}

func (a at) with(field string) at {
	if a.field != "" {
		field = a.field + "." + field
	}
	return at{a.taskID, field}
}

// add records a problem at node n (nil for the file as a whole). Messages
// about one key are prefixed with it.
func (r *reader) add(n *yaml.Node, a at, format string, args ...any) {
	p := Problem{File: r.file, TaskID: a.taskID, Field: a.field, Msg: fmt.Sprintf(format, args...)}
	if n != nil {
		p.Line, p.Col = n.Line, n.Column
	}
	r.problems = append(r.problems, p)
}

// addField records a problem about the value of a.field.
func (r *reader) addField(n *yaml.Node, a at, format string, args ...any) {
	r.add(n, a, "%s: %s", a.field, fmt.Sprintf(format, args...))
}

// resolve follows an alias to the node it names.
func resolve(n *yaml.Node) *yaml.Node {
	for n != nil && n.Kind == yaml.AliasNode {
		n = n.Alias
	}
	return n
}

func isNull(n *yaml.Node) bool {
	return n.Kind == yaml.ScalarNode && n.ShortTag() == "!!null"
}

// describe names what a node holds, for type errors.
func describe(n *yaml.Node) string {
	switch n.Kind {
	case yaml.MappingNode:
		return "a mapping"
	case yaml.SequenceNode:
		return "a list"
	}
	switch n.ShortTag() {
	case "!!str":
		return strconv.Quote(n.Value)
	case "!!bool":
		return "the boolean " + n.Value
	}
	return n.Value
}

// str decodes a scalar as text. Numbers and booleans are taken as written
// (ref: 2024 is the string "2024"). ok is false for null or a wrong type.
func (r *reader) str(n *yaml.Node, a at) (s string, ok bool) {
	switch {
	case n.Kind != yaml.ScalarNode:
		r.addField(n, a, "want a string, got %s", describe(n))
		return "", false
	case isNull(n):
		return "", false
	}
	return n.Value, true
}

// integer decodes a whole number; quoted numbers are refused.
func (r *reader) integer(n *yaml.Node, a at) (int64, bool) {
	if n.Kind == yaml.ScalarNode && isNull(n) {
		return 0, false
	}
	if n.Kind != yaml.ScalarNode || n.ShortTag() != "!!int" {
		r.addField(n, a, "want a whole number, got %s", describe(n))
		return 0, false
	}
	var v int64
	if err := n.Decode(&v); err != nil {
		r.addField(n, a, "want a whole number, got %s", describe(n))
		return 0, false
	}
	return v, true
}

// number decodes a finite number, whole or not; quoted numbers are refused.
func (r *reader) number(n *yaml.Node, a at) (float64, bool) {
	if n.Kind == yaml.ScalarNode && isNull(n) {
		return 0, false
	}
	tag := n.ShortTag()
	if n.Kind != yaml.ScalarNode || tag != "!!int" && tag != "!!float" {
		r.addField(n, a, "want a number, got %s", describe(n))
		return 0, false
	}
	var v float64
	if err := n.Decode(&v); err != nil || math.IsNaN(v) || math.IsInf(v, 0) {
		r.addField(n, a, "want a finite number, got %s", describe(n))
		return 0, false
	}
	return v, true
}

// boolean decodes true or false.
func (r *reader) boolean(n *yaml.Node, a at) (bool, bool) {
	if n.Kind == yaml.ScalarNode && isNull(n) {
		return false, false
	}
	if n.Kind != yaml.ScalarNode || n.ShortTag() != "!!bool" {
		r.addField(n, a, "want true or false, got %s", describe(n))
		return false, false
	}
	var v bool
	if err := n.Decode(&v); err != nil {
		r.addField(n, a, "want true or false, got %s", describe(n))
		return false, false
	}
	return v, true
}

// duration decodes a positive Go duration such as 30m or 1h30m.
func (r *reader) duration(n *yaml.Node, a at) (time.Duration, bool) {
	if n.Kind == yaml.ScalarNode && isNull(n) {
		return 0, false
	}
	if n.Kind != yaml.ScalarNode || n.ShortTag() != "!!str" {
		r.addField(n, a, "want a duration with a unit, like 30m or 1h30m, got %s", describe(n))
		return 0, false
	}
	d, err := time.ParseDuration(n.Value)
	switch {
	case err != nil:
		r.addField(n, a, "bad duration %q (want a Go duration like 30m or 1h30m)", n.Value)
		return 0, false
	case d <= 0:
		r.addField(n, a, "must be positive, got %s", n.Value)
		return 0, false
	}
	return d, true
}

// pair is one key and its value in a mapping.
type pair struct {
	key, value *yaml.Node
}

// pairs returns the entries of mapping m, reporting duplicate keys and
// non-string keys. YAML merge keys (<<: *anchor) are expanded; explicit keys
// win over merged ones.
func (r *reader) pairs(m *yaml.Node, a at) []pair {
	var explicit, merged []pair
	first := map[string]*yaml.Node{}
	for i := 0; i+1 < len(m.Content); i += 2 {
		k, v := m.Content[i], m.Content[i+1]
		if k.Kind == yaml.ScalarNode && k.ShortTag() == "!!merge" {
			merged = append(merged, r.mergeSources(v, a)...)
			continue
		}
		if k.Kind != yaml.ScalarNode {
			r.add(k, a, "keys must be plain names, got %s", describe(k))
			continue
		}
		if prev, dup := first[k.Value]; dup {
			if prev.Line == k.Line {
				r.add(k, a.with(k.Value), "duplicate key %q (first at column %d)", k.Value, prev.Column)
			} else {
				r.add(k, a.with(k.Value), "duplicate key %q (first on line %d)", k.Value, prev.Line)
			}
			continue
		}
		first[k.Value] = k
		explicit = append(explicit, pair{k, v})
	}
	for _, p := range merged {
		if _, set := first[p.key.Value]; !set {
			first[p.key.Value] = p.key
			explicit = append(explicit, p)
		}
	}
	return explicit
}

// mergeSources returns the entries a merge key brings in: one mapping or a
// list of them, the earlier ones winning.
func (r *reader) mergeSources(v *yaml.Node, a at) []pair {
	v = resolve(v)
	var sources []*yaml.Node
	switch v.Kind {
	case yaml.MappingNode:
		sources = []*yaml.Node{v}
	case yaml.SequenceNode:
		for _, s := range v.Content {
			sources = append(sources, resolve(s))
		}
	}
	var out []pair
	for _, s := range sources {
		if s.Kind != yaml.MappingNode {
			r.add(s, a, "<< must merge a mapping, got %s", describe(s))
			continue
		}
		out = append(out, r.pairs(s, a)...)
	}
	if len(sources) == 0 {
		r.add(v, a, "<< must merge a mapping, got %s", describe(v))
	}
	return out
}
