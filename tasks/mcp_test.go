package tasks

import (
	"reflect"
	"strings"
	"testing"
	"time"
)

func TestParseMCPServers(t *testing.T) {
	q, err := Parse("/q/q.yaml", []byte(`
defaults:
  repo: /r
  mcp_servers:
    search: {command: [./bin/search, --fast], tools: [web_search], env: [SEARCH_KEY], timeout: 10s}
    docs: {url: "http://127.0.0.1:8080/mcp", tools: ["*"]}
tasks:
  - {id: a, prompt: p}
  - {id: b, prompt: p, mcp_servers: {}}
`))
	if err != nil {
		t.Fatal(err)
	}
	want := []MCPServer{
		{Name: "docs", URL: "http://127.0.0.1:8080/mcp", Tools: []string{"*"}, Timeout: DefaultMCPTimeout},
		{Name: "search", Command: []string{"/q/bin/search", "--fast"}, Tools: []string{"web_search"}, Env: []string{"SEARCH_KEY"}, Timeout: 10 * time.Second},
	}
	if got := q.Tasks[0].MCPServers; !reflect.DeepEqual(got, want) {
		t.Errorf("a: %+v\nwant %+v", got, want)
	}
	if got := q.Tasks[1].MCPServers; len(got) != 0 {
		t.Errorf("b: mcp_servers: {} should turn the defaults' off, got %+v", got)
	}
}

func TestParseMCPServersErrors(t *testing.T) {
	for _, tt := range []struct{ value, want string }{
		{`[a]`, `q.yaml:1:44: task "a": mcp_servers: want a mapping of server names`},
		{`{Search: {command: [x], tools: [t]}}`, `server name "Search"`},
		{`{s: {command: [x]}}`, `mcp_servers.s: tools is missing`},
		{`{s: {tools: [t]}}`, `mcp_servers.s: give exactly one of command`},
		{`{s: {command: [x], url: "http://h/", tools: [t]}}`, `give exactly one of command`},
		{`{s: {command: [], tools: [t]}}`, `mcp_servers.s.command: is empty`},
		{`{s: {url: "file:///x", tools: [t]}}`, `want an http:// or https:// URL`},
		{`{s: {url: "https://u:p@h/", tools: [t]}}`, `holds a credential`},
		{`{s: {command: [x], tools: ["a.b"]}}`, `tool name "a.b"`},
		{`{s: {command: [x], tools: ["*", t]}}`, `mcp_servers.s: tools: "*" already allows`},
		{`{s: {command: [x], tools: [t], env: ["A-B"]}}`, `variable name "A-B"`},
		{`{s: {command: [x], tools: [t], cmd: [y]}}`, `unknown key`},
	} {
		_, err := Parse("q.yaml", []byte(`[{id: a, repo: /r, prompt: p, mcp_servers: `+tt.value+`}]`))
		if err == nil || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("%s: error %v, want %q", tt.value, err, tt.want)
		}
	}
}
