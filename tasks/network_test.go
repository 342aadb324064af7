package tasks

import (
	"reflect"
	"testing"
)

func TestNetworkAllowlist(t *testing.T) {
	q, err := Parse("q.yaml", []byte(`
defaults:
  repo: /r
  network:
    allow: ["proxy.example.com:443", "*.pkg.example.org"]
tasks:
  - {id: a, prompt: p}
  - {id: b, prompt: p, network: none}
  - {id: c, prompt: p, network: {allow: [Bücher.Example.]}}
  - {id: d, prompt: p, network: bridge}
`))
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]any{}
	for _, tk := range q.Tasks {
		got[tk.ID] = []any{tk.Network, tk.Allow}
	}
	want := map[string]any{
		"a": []any{NetworkAllowlist, []string{"proxy.example.com:443", "*.pkg.example.org"}},
		"b": []any{NetworkNone, []string(nil)},
		"c": []any{NetworkAllowlist, []string{"Bücher.Example."}},
		"d": []any{NetworkBridge, []string(nil)},
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("got %v\nwant %v", got, want)
	}
	q.Tasks[0].Allow[0] = "changed"
	if q.Tasks[1].Allow != nil || len(q.Tasks) > 2 && q.Tasks[0].Allow[1] != "*.pkg.example.org" {
		t.Errorf("tasks share the defaults' allowlist")
	}
}

func TestNetworkAllowlistMistakes(t *testing.T) {
	_, lines := parseProblems(t, "tasks.yaml", `defaults: {repo: /r}
tasks:
  - id: a
    prompt: p
    network:
      allow:
        - ok.example.com
        - 10.0.0.1:443
        - "https://example.com"
        - "example.com:99999"
        - "*.com"
        - 2130706433
  - id: b
    prompt: p
    network: {allow: []}
  - id: c
    prompt: p
    network: {allow: example.com}
  - id: d
    prompt: p
    network: {deny: [x.example.com]}
  - id: e
    prompt: p
    network: {}
`)
	assertLines(t, lines, []string{
		`tasks.yaml:8:11: task "a": network.allow: "10.0.0.1:443": IP addresses are not allowed, name the host`,
		`tasks.yaml:9:11: task "a": network.allow: "https://example.com": write a host name (and :port), not a URL`,
		`tasks.yaml:10:11: task "a": network.allow: "example.com:99999": port "99999": want a number from 1 to 65535`,
		`tasks.yaml:11:11: task "a": network.allow: "*.com": a wildcard must stand under a domain of at least two labels`,
		`tasks.yaml:12:11: task "a": network.allow: "2130706433": IP addresses are not allowed, name the host`,
		`tasks.yaml:15:22: task "b": network.allow: is empty: write network: none for no network`,
		`tasks.yaml:18:22: task "c": network.allow: want a list of host names with an optional :port, got "example.com"`,
		`tasks.yaml:21:15: task "d": unknown key "deny" in network`,
		`tasks.yaml:24:14: task "e": network: want allow: [host names] in the mapping`,
	})
}

func TestNetworkAllowlistJSONL(t *testing.T) {
	q, err := Parse("q.jsonl", []byte(`{"id": "a", "repo": "/r", "prompt": "p", "network": {"allow": ["registry.npmjs.org:443"]}}
`))
	if err != nil {
		t.Fatal(err)
	}
	if tk := q.Tasks[0]; tk.Network != NetworkAllowlist || !reflect.DeepEqual(tk.Allow, []string{"registry.npmjs.org:443"}) {
		t.Errorf("got %q %v", tk.Network, tk.Allow)
	}
	_, lines := parseProblems(t, "q.jsonl", `{"id": "a", "repo": "/r", "prompt": "p", "network": {"allow": ["[::1]:443"]}}
`)
	if len(lines) != 1 || lines[0] == "" {
		t.Fatalf("problems: %q", lines)
	}
}
