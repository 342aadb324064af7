package tasks

import (
	"fmt"
	"net/url"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"time"

	"go.yaml.in/yaml/v3"
)

// MCPServer is a server of host tools (the Model Context Protocol) whose
// tools the task's agent may call: mcp_servers in a task file. The server
// runs on the host, outside the sandbox, so it is off unless configured.
type MCPServer struct {
	// Name is the key under mcp_servers; the server's tools reach the
	// model as NAME__TOOL.
	Name string
	// Command is a program and its arguments, started on the host and
	// spoken to over its stdin and stdout; URL is a streamable-HTTP
	// endpoint instead. Exactly one is set.
	Command []string
	URL     string
	// Tools lists the server's tools the model sees; ["*"] for all.
	Tools []string
	// Env names the host environment variables the server's process gets;
	// it gets no other (PATH excepted), so runner's own credentials never
	// reach it unless named.
	Env []string
	// Timeout bounds one call; default DefaultMCPTimeout.
	Timeout time.Duration
}

// DefaultMCPTimeout bounds one call of a host tool.
const DefaultMCPTimeout = time.Minute

// AllTools in MCPServer.Tools exposes every tool of the server.
const AllTools = "*"

// mcpName is what a server's name may be: it prefixes tool names, which
// the Chat Completions API limits to letters, digits, '_' and '-'.
var mcpName = regexp.MustCompile(`^[a-z][a-z0-9-]{0,23}$`)

// mcpToolName is what an allowed tool's name may be.
var mcpToolName = regexp.MustCompile(`^[A-Za-z0-9_-]{1,40}$`)

var mcpServerFields = []field{
	{"command", false, func(r *reader, v *yaml.Node, a at, s *spec) {
		words, ok := r.strList(v, a, "words", func(w string) error {
			if w == "" {
				return fmt.Errorf("an empty word")
			}
			return nil
		})
		if !ok {
			return
		}
		if len(words) == 0 {
			r.addField(v, a, "is empty: give the program and its arguments")
			return
		}
		if strings.Contains(words[0], "/") && !filepath.IsAbs(words[0]) {
			words[0] = filepath.Join(r.dir, words[0])
		}
		s.mcp.Command = words
	}},
	{"url", false, func(r *reader, v *yaml.Node, a at, s *spec) {
		text, ok := r.str(v, a)
		if !ok {
			return
		}
		u, err := url.Parse(text)
		if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
			r.addField(v, a, "want an http:// or https:// URL, got %q", text)
			return
		}
		if u.User != nil {
			r.addField(v, a, "holds a credential; give it through env instead")
			return
		}
		s.mcp.URL = text
	}},
	{"tools", false, func(r *reader, v *yaml.Node, a at, s *spec) {
		tools, ok := r.strList(v, a, "tool names", func(t string) error {
			if t != AllTools && !mcpToolName.MatchString(t) {
				return fmt.Errorf("tool name %q: use letters, digits, '_' and '-' (at most 40), or %q for all", t, AllTools)
			}
			return nil
		})
		if ok {
			s.mcp.Tools = tools
		}
	}},
	{"env", false, func(r *reader, v *yaml.Node, a at, s *spec) {
		if names, ok := r.strList(v, a, "variable names", checkEnvKey); ok {
			s.mcp.Env = names
		}
	}},
	{"timeout", false, func(r *reader, v *yaml.Node, a at, s *spec) {
		if d, ok := r.duration(v, a); ok {
			s.mcp.Timeout = d
		}
	}},
}

// decodeMCPServers decodes mcp_servers: a mapping of server names to
// their settings.
func decodeMCPServers(r *reader, v *yaml.Node, a at, s *spec) {
	if isNull(v) {
		return
	}
	if v.Kind != yaml.MappingNode {
		r.addField(v, a, "want a mapping of server names to {command or url, tools}, got %s", describe(v))
		return
	}
	servers := []MCPServer{}
	ok := true
	for _, p := range r.pairs(v, a) {
		name, val := p.key.Value, resolve(p.value)
		sa := a.with(name)
		if !mcpName.MatchString(name) {
			r.addField(p.key, a, "server name %q: use lower-case letters, digits and '-', starting with a letter (at most 24)", name)
			ok = false
			continue
		}
		if val.Kind != yaml.MappingNode {
			r.addField(val, sa, "want {command: [...] or url: ..., tools: [...]}, got %s", describe(val))
			ok = false
			continue
		}
		sub := &spec{seen: map[string]bool{}, mcp: &MCPServer{Name: name}}
		before := len(r.problems)
		r.decodeKeys(val, sa, mcpServerFields, true, sub)
		m := sub.mcp
		switch {
		case len(r.problems) > before:
			ok = false
			continue
		case (len(m.Command) > 0) == (m.URL != ""):
			r.addField(p.key, sa, "give exactly one of command (a program on this machine) and url")
		case len(m.Tools) == 0:
			r.addField(p.key, sa, "tools is missing: list the tools the agent may call, or [%q] for all", AllTools)
		case slices.Contains(m.Tools, AllTools) && len(m.Tools) > 1:
			r.addField(p.key, sa, "tools: %q already allows every tool; list names or %q, not both", AllTools, AllTools)
		default:
			if m.Timeout == 0 {
				m.Timeout = DefaultMCPTimeout
			}
			servers = append(servers, *m)
			continue
		}
		ok = false
	}
	if ok {
		slices.SortFunc(servers, func(x, y MCPServer) int { return strings.Compare(x.Name, y.Name) })
		s.MCPServers = &servers
	}
}
