package tasks

import "testing"

// protocol: defaults apply, a task overrides, and a wrong value is
// reported with its place and a suggestion.
func TestProtocolKey(t *testing.T) {
	q, err := Parse("tasks.yaml", []byte(`defaults:
  repo: /src/app
  protocol: xml
tasks:
  - id: a
    prompt: Do it.
  - id: b
    prompt: Do it.
    protocol: auto
`))
	if err != nil {
		t.Fatal(err)
	}
	for i, want := range []string{"xml", "auto"} {
		if got := q.Tasks[i].Protocol; got != want {
			t.Errorf("task %s: protocol %q, want %q", q.Tasks[i].ID, got, want)
		}
	}
	q, err = Parse("tasks.jsonl", []byte(`{"id":"a","repo":"/src/app","prompt":"Do it."}`+"\n"))
	if err != nil || q.Tasks[0].Protocol != "" {
		t.Errorf("unset protocol: %q, %v; want empty (the run's)", q.Tasks[0].Protocol, err)
	}

	_, lines := parseProblems(t, "tasks.yaml", `tasks:
  - id: a
    repo: /src/app
    prompt: Do it.
    protocol: nativ
  - id: b
    repo: /src/app
    prompt: Do it.
    protocol: 1
`)
	assertLines(t, lines, []string{
		`tasks.yaml:5:15: task "a": protocol: unknown tool protocol "nativ": want one of native, xml, auto (did you mean "native"?)`,
		`tasks.yaml:9:15: task "b": protocol: unknown tool protocol "1": want one of native, xml, auto`,
	})
}
