package tasks

import (
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"testing"
	"time"

	"github.com/runner-dev/runner/internal/policy"
)

func TestParsePolicy(t *testing.T) {
	dir := t.TempDir()
	hook := filepath.Join(dir, "hooks", "check.sh")
	os.MkdirAll(filepath.Dir(hook), 0o755)
	if err := os.WriteFile(hook, []byte("#!/bin/sh\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	q, err := Parse(filepath.Join(dir, "q.yaml"), []byte(`
defaults:
  repo: /r
  deny_commands: ['\bgit\s+push\b', 'curl .*\|\s*sh']
  pre_tool_hook: hooks/check.sh
  hook_timeout: 5s
tasks:
  - {id: defaults, prompt: p}
  - {id: off, prompt: p, protected_paths: []}
  - id: own
    prompt: p
    protected_paths: [secrets/**, "*.pem"]
    deny_commands: []
    pre_tool_hook: `+hook+`
    hook_timeout: 1m
`))
	if err != nil {
		t.Fatalf("Parse: %v", err)
	}
	deny := []string{`\bgit\s+push\b`, `curl .*\|\s*sh`}
	want := map[string]policy.Policy{
		"defaults": {Protected: policy.DefaultProtected, DenyCommands: deny, Hook: hook, HookTimeout: 5 * time.Second},
		"off":      {Protected: []string{}, DenyCommands: deny, Hook: hook, HookTimeout: 5 * time.Second},
		"own":      {Protected: []string{"secrets/**", "*.pem"}, DenyCommands: []string{}, Hook: hook, HookTimeout: time.Minute},
	}
	for _, task := range q.Tasks {
		if got := task.Policy; !reflect.DeepEqual(got, want[task.ID]) {
			t.Errorf("task %s: policy\n got %#v\nwant %#v", task.ID, got, want[task.ID])
		}
	}
	// Tasks get their own copies: changing one changes neither the other
	// tasks nor the package's defaults.
	q.Tasks[0].Policy.Protected[0] = "changed"
	q.Tasks[0].Policy.DenyCommands[0] = "changed"
	if policy.DefaultProtected[0] == "changed" || q.Tasks[1].Policy.DenyCommands[0] == "changed" {
		t.Errorf("tasks share the policy lists of the defaults")
	}
}

func TestParsePolicyJSONL(t *testing.T) {
	q, err := Parse("q.jsonl", []byte(`{"defaults": {"repo": "/r", "protected_paths": ["infra/**"]}}
{"id": "a", "prompt": "p", "deny_commands": ["^rm -rf /$"]}
`))
	if err != nil {
		t.Fatalf("Parse: %v", err)
	}
	got := q.Tasks[0].Policy
	if !slices.Equal(got.Protected, []string{"infra/**"}) || !slices.Equal(got.DenyCommands, []string{"^rm -rf /$"}) || got.Hook != "" {
		t.Errorf("policy = %#v", got)
	}
}

func TestParsePolicyMistakes(t *testing.T) {
	dir := t.TempDir()
	plain := filepath.Join(dir, "plain.sh")
	if err := os.WriteFile(plain, []byte("#!/bin/sh\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	file := filepath.Join(dir, "q.yaml")
	_, lines := parseProblems(t, file, `defaults:
  repo: /r
  protected_paths: .github/workflows/**
  deny_commands: ['git (push']
tasks:
  - id: a
    prompt: p
    protected_paths:
      - ok/**
      - "[abc"
      - "!keep"
      - {a: b}
    pre_tool_hook: missing.sh
  - id: b
    prompt: p
    pre_tool_hook: plain.sh
    hook_timeout: soon
    deny_commands: ["", '\bgit\s+push\b', '(?P<x']
`)
	assertLines(t, lines, []string{
		file + `:3:20: defaults.protected_paths: want a list of globs, got ".github/workflows/**"`,
		file + ":4:19: defaults.deny_commands: bad deny rule \"git (push\": missing closing ): `git (push`",
		file + `:10:9: task "a": protected_paths: bad glob pattern "[abc": unterminated or unknown [...] class`,
		file + `:11:9: task "a": protected_paths: bad glob pattern "!keep": negation is not supported (write \! for a literal '!')`,
		file + `:12:9: task "a": protected_paths: want a list of globs, got a mapping in it`,
		file + `:13:20: task "a": pre_tool_hook: pre-tool hook ` + filepath.Join(dir, "missing.sh") + `: no such file`,
		file + `:16:20: task "b": pre_tool_hook: pre-tool hook ` + plain + `: not executable (chmod +x it)`,
		file + `:17:19: task "b": hook_timeout: bad duration "soon" (want a Go duration like 30m or 1h30m)`,
		file + `:18:21: task "b": deny_commands: bad deny rule "": empty, it would deny every command`,
		file + ":18:43: task \"b\": deny_commands: bad deny rule \"(?P<x\": invalid named capture: `(?P<x`",
	})
}
