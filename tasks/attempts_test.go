package tasks

import (
	"strings"
	"testing"
)

// attempts, pick and stop_on_success are read from a task or the defaults,
// the task's winning; unset, a task runs once, picks the first attempt
// that passes and stops the others then.
func TestAttemptKeys(t *testing.T) {
	q, err := Parse("tasks.yaml", []byte(`defaults:
  repo: /src/app
  attempts: 3
  stop_on_success: false
tasks:
  - id: a
    prompt: Do it.
  - id: b
    prompt: Do it.
    attempts: 2
    pick: cheapest
  - id: c
    prompt: Do it.
    attempts: 1
    stop_on_success: true
`))
	if err != nil {
		t.Fatal(err)
	}
	type got struct {
		attempts int
		pick     Pick
		stops    bool
	}
	want := []got{{3, "", false}, {2, PickCheapest, false}, {1, "", true}}
	for i, task := range q.Tasks {
		if g := (got{task.Attempts, task.Pick, task.StopsOnSuccess()}); g != want[i] {
			t.Errorf("task %s: %+v, want %+v", task.ID, g, want[i])
		}
	}
	q, err = Parse("tasks.jsonl", []byte(`{"id":"x","repo":"/src/app","prompt":"Do it."}`+"\n"))
	if err != nil {
		t.Fatal(err)
	}
	if task := q.Tasks[0]; task.Attempts != 0 || task.BestOf() || task.Pick != "" || !task.StopsOnSuccess() {
		t.Errorf("unset: %+v", task)
	}
}

// Each mistake in the best-of-n keys is reported at its place, with the
// task it belongs to.
func TestAttemptKeyMistakes(t *testing.T) {
	_, lines := parseProblems(t, "tasks.yaml", `tasks:
  - id: zero
    repo: /src/app
    prompt: Do it.
    attempts: 0
  - id: many
    repo: /src/app
    prompt: Do it.
    attempts: 11
  - id: word
    repo: /src/app
    prompt: Do it.
    attempts: three
    pick: best
  - id: both
    repo: /src/app
    prompt: Do it.
    attempts: 2
    pick: cheapest
    stop_on_success: true
  - id: remote
    repo: https://example.com/app.git
    prompt: Do it.
    attempts: 2
  - id: clash
    repo: /src/app
    prompt: Do it.
    branch: agent/zero-attempt-1
`)
	want := []string{
		`tasks.yaml:5:15: task "zero": attempts: want at least 1, got 0`,
		`tasks.yaml:9:15: task "many": attempts: at most 10 attempts run on one task, got 11`,
		`tasks.yaml:13:15: task "word": attempts: want a whole number, got "three"`,
		`tasks.yaml:14:11: task "word": pick: want "first" or "cheapest", got "best"`,
		`tasks.yaml:15:5: task "both": stop_on_success: true cannot go with pick: cheapest, which waits for every attempt to end`,
		`tasks.yaml:21:5: task "remote": attempts: a task with more than one attempt needs a local repository, where its attempt branches are kept; https://example.com/app.git is a URL`,
	}
	for _, w := range want {
		found := false
		for _, l := range lines {
			found = found || l == w
		}
		if !found {
			t.Errorf("missing problem %q in:\n%s", w, strings.Join(lines, "\n"))
		}
	}
	if len(lines) != len(want) {
		t.Errorf("%d problems, want %d:\n%s", len(lines), len(want), strings.Join(lines, "\n"))
	}
}

// The attempt branches of a task are claimed like its branch: another
// task's branch may not be one of them, nor below one.
func TestAttemptBranchesCollide(t *testing.T) {
	_, lines := parseProblems(t, "tasks.yaml", `tasks:
  - id: clash
    repo: /src/app
    prompt: Do it.
    branch: agent/multi-attempt-2
  - id: multi
    repo: /src/app
    prompt: Do it.
    attempts: 2
`)
	if len(lines) != 1 || !strings.Contains(lines[0], `task "multi": attempt 2: branch "agent/multi-attempt-2" is also the branch of task "clash"`) {
		t.Errorf("problems:\n%s", strings.Join(lines, "\n"))
	}
	if got := AttemptBranch("agent/x", 3); got != "agent/x-attempt-3" {
		t.Errorf("AttemptBranch: %q", got)
	}
}
