package tasks

import (
	"slices"
	"strings"

	"go.yaml.in/yaml/v3"
)

// Protocols are the values of the protocol key: how the model is offered
// the tools and its calls read. native uses the API's tool calling; xml
// describes the tools in the system message and reads calls from the
// reply's text; auto is native until the server refuses tools, then xml.
// The grammar and the fallback are the agent package's (agent.WithProtocol).
var Protocols = []string{"native", "xml", "auto"}

// ValidProtocol reports whether name is one of Protocols.
func ValidProtocol(name string) bool { return slices.Contains(Protocols, name) }

func decodeProtocol(r *reader, v *yaml.Node, a at, s *spec) {
	name, ok := r.str(v, a)
	if !ok {
		return
	}
	if !ValidProtocol(name) {
		hint := ""
		if s := suggest(name, Protocols); s != "" {
			hint = " (did you mean \"" + s + "\"?)"
		}
		r.addField(v, a, "unknown tool protocol %q: want one of %s%s", name, strings.Join(Protocols, ", "), hint)
		return
	}
	s.Protocol = &name
}
