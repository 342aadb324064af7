package tasks

import (
	"os"
	"path/filepath"
	"reflect"
	"testing"
	"time"
)

func TestParseSetup(t *testing.T) {
	repo := t.TempDir()
	if err := os.WriteFile(filepath.Join(repo, "go.sum"), nil, 0o644); err != nil {
		t.Fatal(err)
	}
	input := `defaults:
  repo: ` + repo + `
  setup: go mod download
  setup_env:
    GOFLAGS: -mod=mod
    GOPRIVATE_TOKEN: ${MY_TOKEN}
  cache_key: [go.sum]
tasks:
  - id: a
    prompt: Do it.
  - id: b
    prompt: Do it.
    setup: [apt-get update, apt-get install -y jq]
    setup_network: none
    setup_timeout: 5m
    setup_cache: false
    setup_env: {}
  - id: c
    prompt: Do it.
    setup: []
`
	q, err := Parse(filepath.Join(t.TempDir(), "tasks.yaml"), []byte(input))
	if err != nil {
		t.Fatal(err)
	}
	want := []Setup{
		{Commands: []string{"go mod download"}, Network: NetworkBridge, Timeout: DefaultSetupTimeout,
			Env: map[string]string{"GOFLAGS": "-mod=mod"}, HostEnv: map[string]string{"GOPRIVATE_TOKEN": "MY_TOKEN"}, CacheKey: []string{"go.sum"}},
		{Commands: []string{"apt-get update", "apt-get install -y jq"}, Network: NetworkNone, Timeout: 5 * time.Minute,
			CacheKey: []string{"go.sum"}, NoCache: true},
		{},
	}
	for i, task := range q.Tasks {
		if !reflect.DeepEqual(task.Setup, want[i]) {
			t.Errorf("task %s: setup\n got %+v\nwant %+v", task.ID, task.Setup, want[i])
		}
	}
}

func TestParseSetupMistakes(t *testing.T) {
	repo := t.TempDir()
	_, lines := parseProblems(t, "tasks.yaml", `tasks:
  - id: a
    repo: `+repo+`
    prompt: Do it.
    setup: make deps
    cache_key:
      - package-lock.json
  - id: b
    repo: `+repo+`
    prompt: Do it.
    setup: ["ok", ""]
    setup_network: host
    setup_env:
      TOKEN: prefix-${TOKEN}
    cache_key: [../etc/passwd]
  - id: c
    repo: `+repo+`
    prompt: Do it.
    cache_key: [go.sum]
`)
	assertLines(t, lines, []string{
		`tasks.yaml:7:7: task "a": cache_key: package-lock.json does not exist in ` + repo,
		`tasks.yaml:11:19: task "b": setup: an empty command`,
		`tasks.yaml:12:20: task "b": setup_network: want none or bridge, got "host"`,
		`tasks.yaml:14:14: task "b": setup_env.TOKEN: write ${NAME} alone to read the host's variable NAME, got "prefix-${TOKEN}"`,
		`tasks.yaml:15:17: task "b": cache_key: "../etc/passwd": want a path relative to the repository root, such as go.sum or web/package-lock.json`,
		`tasks.yaml:16:5: task "c": cache_key is set but the task has no setup commands (setup)`,
	})
}
