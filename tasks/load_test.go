package tasks

import (
	"context"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/runner-dev/runner/internal/policy"
)

func ptr[T any](v T) *T { return &v }

func TestLoadExamples(t *testing.T) {
	const gib = 1 << 30
	yamlEnv := map[string]string{"GOFLAGS": "-mod=mod", "CGO_ENABLED": "0"}
	webapp := Task{
		Repo: "https://github.com/example/webapp.git", Ref: "main",
		Image: "runner-sandbox:latest", Model: "gpt-4.1-mini", BudgetUSD: 0.5, MaxSteps: 40,
		Timeout: 30 * time.Minute, Check: "go test ./...", CheckRetries: 1, CheckTimeout: 5 * time.Minute,
		Network: NetworkNone, Limits: Limits{Memory: 2 * gib, CPUs: 2, Pids: 512}, Env: yamlEnv,
		Policy: policy.Policy{Protected: policy.DefaultProtected}, Exclude: DefaultExclude,
	}
	with := func(base Task, edit func(*Task)) Task {
		base.Env = map[string]string{}
		for k, v := range webapp.Env {
			base.Env[k] = v
		}
		edit(&base)
		return base
	}
	cli := Task{Repo: "git@github.com:example/cli.git", Model: "gpt-4.1-mini", Timeout: 20 * time.Minute,
		Network: NetworkNone, Limits: Limits{Memory: gib}, Policy: policy.Policy{Protected: policy.DefaultProtected},
		Exclude: DefaultExclude}

	tests := []struct {
		file   string
		format Format
		want   []Task
	}{
		{"testdata/example.yaml", FormatYAML, []Task{
			with(webapp, func(t *Task) {
				t.ID, t.Branch, t.Prompt = "fix-typo", "agent/fix-typo", "Fix the spelling mistakes in README.md."
				t.Check, t.Push = "true", ptr(false)
				t.Source = Source{"testdata/example.yaml", 23}
			}),
			with(webapp, func(t *Task) {
				t.ID, t.Branch = "flaky-login-test", "agent/flaky-login-test"
				t.Prompt = "TestLogin fails about one run in ten. Find the cause and make the test\ndeterministic without weakening what it checks.\n"
				t.BudgetUSD, t.Timeout = 2, time.Hour
				t.Limits.Memory = 4 * gib
				t.Env["CGO_ENABLED"] = "1"
				t.Source = Source{"testdata/example.yaml", 28}
			}),
			with(webapp, func(t *Task) {
				t.ID, t.Branch = "vendor-update", "chore/update-deps"
				t.Repo, t.Ref = "webapp", "v1.4.0" // ../webapp seen from testdata/
				t.Prompt = "Update the Go dependencies to their latest patch releases."
				t.Network = NetworkBridge
				t.Source = Source{"testdata/example.yaml", 39}
			}),
		}},
		{"testdata/example.jsonl", FormatJSONL, []Task{
			func() Task {
				t := cli
				t.ID, t.Branch, t.Prompt, t.Check = "issue-101", "agent/issue-101", "Make `cli --version` print the build commit.", "make test"
				t.Source = Source{"testdata/example.jsonl", 2}
				return t
			}(),
			func() Task {
				t := cli
				t.ID, t.Branch, t.Prompt = "issue-102", "agent/issue-102", "Reject negative values of --retries with a clear message."
				t.MaxSteps, t.CheckRetries = 25, 2
				t.Source = Source{"testdata/example.jsonl", 3}
				return t
			}(),
			func() Task {
				t := cli
				t.ID, t.Branch, t.Ref = "issue-103", "backport/issue-103", "release-2.x"
				t.Prompt = "Backport the fix for the /tmp race."
				t.Push, t.BudgetUSD = ptr(true), 1.25
				t.Source = Source{"testdata/example.jsonl", 5}
				return t
			}(),
		}},
	}
	for _, tt := range tests {
		t.Run(tt.file, func(t *testing.T) {
			q, err := Load(context.Background(), tt.file)
			if err != nil {
				t.Fatalf("Load: %v", err)
			}
			if q.Format != tt.format || q.File != tt.file {
				t.Errorf("got format %q file %q, want %q %q", q.Format, q.File, tt.format, tt.file)
			}
			if len(q.Tasks) != len(tt.want) {
				t.Fatalf("got %d tasks, want %d", len(q.Tasks), len(tt.want))
			}
			for i, got := range q.Tasks {
				if !reflect.DeepEqual(got, tt.want[i]) {
					t.Errorf("task %d:\n got %+v\nwant %+v", i, got, tt.want[i])
				}
			}
		})
	}
}

// TestParseDefaults checks how defaults and task values combine.
func TestParseDefaults(t *testing.T) {
	tests := []struct {
		name  string
		file  string
		input string
		check func(t *testing.T, tasks []Task)
	}{
		{"task value wins over default", "q.yaml", `
defaults: {repo: /r, model: small, max_steps: 10}
tasks:
  - {id: a, prompt: p, model: large}
  - {id: b, prompt: p}
`, func(t *testing.T, ts []Task) {
			if got := []string{ts[0].Model, ts[1].Model}; !reflect.DeepEqual(got, []string{"large", "small"}) {
				t.Errorf("models: got %q, want [large small]", got)
			}
			if ts[0].MaxSteps != 10 || ts[1].MaxSteps != 10 {
				t.Errorf("max_steps: got %d %d, want 10 10", ts[0].MaxSteps, ts[1].MaxSteps)
			}
		}},
		{"limits merge key by key, env entry by entry", "q.yaml", `
defaults:
  repo: /r
  limits: {memory: 1g, cpus: 1.5}
  env: {A: "1", B: "2"}
tasks:
  - id: a
    prompt: p
    limits: {cpus: 4, pids: 100}
    env: {B: three, C: 4}
`, func(t *testing.T, ts []Task) {
			if want := (Limits{Memory: 1 << 30, CPUs: 4, Pids: 100}); ts[0].Limits != want {
				t.Errorf("limits: got %+v, want %+v", ts[0].Limits, want)
			}
			if want := map[string]string{"A": "1", "B": "three", "C": "4"}; !reflect.DeepEqual(ts[0].Env, want) {
				t.Errorf("env: got %v, want %v", ts[0].Env, want)
			}
		}},
		{"unset push stays nil, set push is copied per task", "q.yaml", `
tasks:
  - {id: a, repo: /r, prompt: p}
  - {id: b, repo: /r, prompt: p, push: true}
  - {id: c, repo: /r, prompt: p, push: false}
`, func(t *testing.T, ts []Task) {
			if ts[0].Push != nil {
				t.Errorf("a: got push %v, want nil", *ts[0].Push)
			}
			if ts[1].Push == nil || !*ts[1].Push || ts[2].Push == nil || *ts[2].Push {
				t.Errorf("b, c: got push %v %v, want true false", ts[1].Push, ts[2].Push)
			}
		}},
		{"default push does not alias between tasks", "q.yaml", `
defaults: {repo: /r, push: true}
tasks: [{id: a, prompt: p}, {id: b, prompt: p}]
`, func(t *testing.T, ts []Task) {
			if ts[0].Push == ts[1].Push {
				t.Errorf("tasks share one Push pointer")
			}
			*ts[0].Push = false
			if !*ts[1].Push {
				t.Errorf("changing a's push changed b's")
			}
		}},
		{"branch and network defaults", "q.yaml", `
- {id: a.b_c-1, repo: /r, prompt: p}
`, func(t *testing.T, ts []Task) {
			if ts[0].Branch != "agent/a.b_c-1" || ts[0].Network != NetworkNone {
				t.Errorf("got branch %q network %q, want agent/a.b_c-1 none", ts[0].Branch, ts[0].Network)
			}
		}},
		{"relative repo resolved against the file, URLs and absolute paths kept", "dir/sub/q.yaml", `
- {id: a, repo: ../app, prompt: p}
- {id: b, repo: /abs/app, prompt: p}
- {id: c, repo: "https://h/x.git", prompt: p}
- {id: d, repo: "git@h:x.git", prompt: p}
`, func(t *testing.T, ts []Task) {
			got := []string{ts[0].Repo, ts[1].Repo, ts[2].Repo, ts[3].Repo}
			want := []string{filepath.Join("dir", "app"), "/abs/app", "https://h/x.git", "git@h:x.git"}
			if !reflect.DeepEqual(got, want) {
				t.Errorf("got %q, want %q", got, want)
			}
		}},
		{"JSONL defaults line", "q.jsonl", `{"defaults": {"repo": "/r", "timeout": "90s", "push": false}}
{"id": "a", "prompt": "p"}
{"id": "b", "prompt": "p", "timeout": "2m", "limits": {"memory": 268435456}}
`, func(t *testing.T, ts []Task) {
			if ts[0].Timeout != 90*time.Second || ts[1].Timeout != 2*time.Minute {
				t.Errorf("timeouts: got %v %v, want 1m30s 2m0s", ts[0].Timeout, ts[1].Timeout)
			}
			if ts[0].Repo != "/r" || ts[0].Push == nil || *ts[0].Push {
				t.Errorf("a: got repo %q push %v, want /r false", ts[0].Repo, ts[0].Push)
			}
			if ts[1].Limits.Memory != 256<<20 || ts[1].Source.Line != 3 {
				t.Errorf("b: got memory %d line %d, want %d 3", ts[1].Limits.Memory, ts[1].Source.Line, 256<<20)
			}
		}},
		{"JSON escapes, including \\/", "q.jsonl", `{"id": "a", "repo": "/r", "prompt": "fix \/tmp \"quoting\" \u00e9\n"}
`, func(t *testing.T, ts []Task) {
			if want := "fix /tmp \"quoting\" é\n"; ts[0].Prompt != want {
				t.Errorf("prompt: got %q, want %q", ts[0].Prompt, want)
			}
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			q, err := Parse(tt.file, []byte(strings.TrimPrefix(tt.input, "\n")))
			if err != nil {
				t.Fatalf("Parse: %v", err)
			}
			tt.check(t, q.Tasks)
		})
	}
}

func TestParseMergeKey(t *testing.T) {
	q, err := Parse("q.yaml", []byte(`
tasks:
  - &first {id: a, repo: /r, prompt: p, model: m1, timeout: 5m}
  - <<: *first
    id: b
    model: m2
`))
	if err != nil {
		t.Fatalf("Parse: %v", err)
	}
	b := q.Tasks[1]
	if b.ID != "b" || b.Model != "m2" || b.Timeout != 5*time.Minute || b.Repo != "/r" || b.Prompt != "p" {
		t.Errorf("got %+v, want id b, model m2 and the rest from a", b)
	}
}

func TestParsePromptFile(t *testing.T) {
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "long.md"), []byte("Refactor the parser.\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	q, err := Parse(filepath.Join(dir, "q.yaml"), []byte("- {id: a, repo: /r, prompt_file: long.md}\n"))
	if err != nil {
		t.Fatalf("Parse: %v", err)
	}
	if got, want := q.Tasks[0].Prompt, "Refactor the parser.\n"; got != want {
		t.Errorf("prompt: got %q, want %q", got, want)
	}
}

func TestParseDiskLimit(t *testing.T) {
	tests := []struct {
		value string
		want  int64
		err   string
	}{
		{"512m", 512 << 20, ""},
		{"8g", 8 << 30, ""},
		{"off", -1, ""},
		{"OFF", -1, ""},
		{"10k", 0, `q.yaml:1:58: task "a": limits.disk: 10k is below the 1m minimum`},
		{"lots", 0, `q.yaml:1:58: task "a": limits.disk: memory size "lots"`},
	}
	for _, tt := range tests {
		q, err := Parse("q.yaml", []byte(`[{id: a, repo: /r, prompt: p, limits: {memory: 2g, disk: `+tt.value+`}}]`))
		switch {
		case tt.err != "":
			if err == nil || !strings.Contains(err.Error(), tt.err) {
				t.Errorf("disk %s: error %v, want %q", tt.value, err, tt.err)
			}
		case err != nil:
			t.Errorf("disk %s: %v", tt.value, err)
		case q.Tasks[0].Limits.Disk != tt.want:
			t.Errorf("disk %s = %d, want %d", tt.value, q.Tasks[0].Limits.Disk, tt.want)
		}
	}
}

func TestParseCommitSizeLimit(t *testing.T) {
	tests := []struct {
		file string
		want int64
		err  string
	}{
		{`[{id: a, repo: /r, prompt: p, limits: {commit_size: 256m}}]`, 256 << 20, ""},
		{`{defaults: {limits: {commit_size: 2g}}, tasks: [{id: a, repo: /r, prompt: p}]}`, 2 << 30, ""},
		{`{defaults: {limits: {commit_size: 2g}}, tasks: [{id: a, repo: /r, prompt: p, limits: {commit_size: 8m}}]}`, 8 << 20, ""},
		{`[{id: a, repo: /r, prompt: p}]`, 0, ""},
		{`[{id: a, repo: /r, prompt: p, limits: {commit_size: 10k}}]`, 0, `limits.commit_size: 10k is below the 1m minimum`},
		{`[{id: a, repo: /r, prompt: p, limits: {commit_size: off}}]`, 0, `limits.commit_size: memory size "off"`},
	}
	for _, tt := range tests {
		q, err := Parse("q.yaml", []byte(tt.file))
		switch {
		case tt.err != "":
			if err == nil || !strings.Contains(err.Error(), tt.err) {
				t.Errorf("%s: error %v, want %q", tt.file, err, tt.err)
			}
		case err != nil:
			t.Errorf("%s: %v", tt.file, err)
		case q.Tasks[0].Limits.CommitSize != tt.want:
			t.Errorf("%s: commit_size = %d, want %d", tt.file, q.Tasks[0].Limits.CommitSize, tt.want)
		}
	}
}
