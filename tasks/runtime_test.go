package tasks

import "testing"

// runtime: names the sandbox's isolation runtime; defaults apply, a task
// overrides, and a value that cannot be a runtime's name is reported with
// its place.
func TestRuntimeKey(t *testing.T) {
	q, err := Parse("tasks.yaml", []byte(`defaults:
  repo: /src/app
  runtime: runsc
tasks:
  - id: a
    prompt: Do it.
  - id: b
    prompt: Do it.
    runtime: runc
`))
	if err != nil {
		t.Fatal(err)
	}
	for i, want := range []string{"runsc", "runc"} {
		if got := q.Tasks[i].Runtime; got != want {
			t.Errorf("task %s: runtime %q, want %q", q.Tasks[i].ID, got, want)
		}
	}

	_, lines := parseProblems(t, "tasks.yaml", `tasks:
  - id: a
    repo: /src/app
    prompt: Do it.
    runtime: "run sc"
  - id: b
    repo: /src/app
    prompt: Do it.
    runtime: [runsc]
`)
	assertLines(t, lines, []string{
		`tasks.yaml:5:14: task "a": runtime: want a runtime name such as runc or runsc, got "run sc"`,
		`tasks.yaml:9:14: task "b": runtime: want a string, got a list`,
	})
}
