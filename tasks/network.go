package tasks

import (
	"go.yaml.in/yaml/v3"

	"github.com/runner-dev/runner/internal/egress"
)

// networkFields are the keys of the mapping form of network.
var networkFields = []field{
	{"allow", false, func(r *reader, v *yaml.Node, a at, s *spec) {
		rules, ok := r.strList(resolve(v), a, "host names with an optional :port", func(e string) error {
			_, err := egress.ParseRule(e)
			return err
		})
		if !ok {
			return
		}
		if len(rules) == 0 {
			r.addField(v, a, "is empty: write network: none for no network")
			return
		}
		nw := NetworkAllowlist
		s.Network, s.Allow = &nw, rules
	}},
}

// decodeNetwork reads network: none, network: bridge, or
// network: {allow: [host, *.domain:port, ...]}.
func decodeNetwork(r *reader, v *yaml.Node, a at, s *spec) {
	v = resolve(v)
	if v.Kind == yaml.MappingNode {
		before := len(r.problems)
		r.decodeKeys(v, a, networkFields, false, s)
		if s.Network == nil && len(r.problems) == before {
			r.addField(v, a, "want allow: [host names] in the mapping")
		}
		return
	}
	n, ok := r.str(v, a)
	if !ok {
		return
	}
	if n != string(NetworkNone) && n != string(NetworkBridge) {
		r.addField(v, a, "want %q, %q or a mapping with allow: [host names], got %q", NetworkNone, NetworkBridge, n)
		return
	}
	nw := Network(n)
	s.Network, s.Allow = &nw, nil
}
