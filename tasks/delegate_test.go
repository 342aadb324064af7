package tasks

import (
	"strings"
	"testing"
)

func TestParseDelegate(t *testing.T) {
	q, err := Parse("q.yaml", []byte(`
defaults:
  repo: /r
  delegate: {max_steps: 12}
tasks:
  - {id: inherit, prompt: p}
  - {id: off, prompt: p, delegate: false}
  - {id: on, prompt: p, delegate: true}
  - {id: deep, prompt: p, delegate: {max_depth: 2}}
  - {id: zero, prompt: p, delegate: {max_depth: 0}}
`))
	if err != nil {
		t.Fatalf("Parse: %v", err)
	}
	want := map[string]Delegate{
		"inherit": {MaxDepth: 1, MaxSteps: 12}, "off": {}, "on": {MaxDepth: 1}, "deep": {MaxDepth: 2}, "zero": {},
	}
	for _, task := range q.Tasks {
		if got := task.Delegate; got != want[task.ID] {
			t.Errorf("task %s: delegate = %+v, want %+v", task.ID, got, want[task.ID])
		}
	}
	q, err = Parse("q.yaml", []byte("tasks:\n  - {id: a, repo: /r, prompt: p}\n"))
	if err != nil || q.Tasks[0].Delegate != (Delegate{}) {
		t.Errorf("delegation is on by default: %+v, %v", q.Tasks[0].Delegate, err)
	}
}

func TestParseDelegateErrors(t *testing.T) {
	for _, tc := range []struct{ value, want string }{
		{`{max_depth: 4}`, "q.yaml:3"},
		{`{max_depth: -1}`, "want 0 (off) to 3"},
		{`{max_steps: 0}`, "must be positive"},
		{`{max_step: 3}`, "max_step"},
		{`yes please`, "want true, false or a mapping"},
	} {
		_, err := Parse("q.yaml", []byte("tasks:\n  - id: a\n    delegate: "+tc.value+"\n    repo: /r\n    prompt: p\n"))
		if err == nil || !strings.Contains(err.Error(), tc.want) || !strings.Contains(err.Error(), "delegate") {
			t.Errorf("delegate: %s: error %v, want one naming delegate and %q", tc.value, err, tc.want)
		}
	}
}
