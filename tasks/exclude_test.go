package tasks

import (
	"path/filepath"
	"slices"
	"testing"
)

func TestParseExclude(t *testing.T) {
	q, err := Parse("q.yaml", []byte(`
defaults:
  repo: /r
tasks:
  - {id: default, prompt: p}
  - {id: none, prompt: p, exclude: []}
  - {id: own, prompt: p, exclude: [build/, "*.o", '\#notes']}
`))
	if err != nil {
		t.Fatalf("Parse: %v", err)
	}
	want := map[string][]string{"default": DefaultExclude, "none": {}, "own": {"build/", "*.o", `\#notes`}}
	for _, task := range q.Tasks {
		if got := task.Exclude; !slices.Equal(got, want[task.ID]) || got == nil {
			t.Errorf("task %s: exclude = %#v, want %#v", task.ID, got, want[task.ID])
		}
	}
	// Each task owns its list.
	q.Tasks[0].Exclude[0] = "changed"
	if DefaultExclude[0] == "changed" {
		t.Errorf("a task shares DefaultExclude")
	}

	q, err = Parse("q.jsonl", []byte(`{"defaults": {"repo": "/r", "exclude": []}}
{"id": "a", "prompt": "p"}
{"id": "b", "prompt": "p", "exclude": ["dist/"]}
`))
	if err != nil {
		t.Fatalf("Parse: %v", err)
	}
	if got := q.Tasks[0].Exclude; got == nil || len(got) != 0 {
		t.Errorf("defaults exclude: [] gave %#v, want an empty list", got)
	}
	if got := q.Tasks[1].Exclude; !slices.Equal(got, []string{"dist/"}) {
		t.Errorf("task exclude = %#v, want [dist/]", got)
	}
}

func TestParseExcludeMistakes(t *testing.T) {
	file := filepath.Join(t.TempDir(), "q.yaml")
	_, lines := parseProblems(t, file, `defaults:
  repo: /r
  exclude: __pycache__/
tasks:
  - id: a
    prompt: p
    exclude: ["", "# comment", "two\nlines", {a: b}]
`)
	assertLines(t, lines, []string{
		file + `:3:12: defaults.exclude: want a list of gitignore patterns, got "__pycache__/"`,
		file + `:7:15: task "a": exclude: empty pattern`,
		file + `:7:19: task "a": exclude: a pattern starting with # is a comment; write \# to match a leading #`,
		file + `:7:32: task "a": exclude: a pattern is one line`,
		file + `:7:46: task "a": exclude: want a list of gitignore patterns, got a mapping in it`,
	})
}

func TestResultSetExcluded(t *testing.T) {
	many := make([]string, MaxExcludedListed+7)
	for i := range many {
		many[i] = "p" + string(rune('a'+i%26))
	}
	var r Result
	r.SetExcluded(many, 120)
	if len(r.Excluded) != MaxExcludedListed || r.ExcludedMore != 7 || r.ExcludedFiles != 120 {
		t.Errorf("capped: %d listed, %d more, %d files; want %d, 7, 120", len(r.Excluded), r.ExcludedMore, r.ExcludedFiles, MaxExcludedListed)
	}
	r.SetExcluded([]string{"a/"}, 3)
	if !slices.Equal(r.Excluded, []string{"a/"}) || r.ExcludedMore != 0 || r.ExcludedFiles != 3 {
		t.Errorf("short list: %+v", r)
	}
}
