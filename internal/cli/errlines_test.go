package cli

import (
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/runner-dev/runner/tasks"
)

func TestErrorLines(t *testing.T) {
	invalid := &tasks.ValidationError{Problems: []tasks.Problem{
		{File: "t.yaml", Line: 2, Msg: "unknown key \"x\x1b[2J\""},
		{File: "t.yaml", Line: 3, TaskID: "a", Msg: "bad\nrunner: forged"},
	}}
	tests := []struct {
		name string
		err  error
		want []string
	}{
		{"one line", errors.New("clone: no such path " + hostile), []string{"clone: no such path " + hostileEscaped}},
		{"a line break in an error is shown, not obeyed", errors.New("first\nrunner: forged\n"), []string{`first\nrunner: forged`}},
		{"a list keeps its lines, each escaped", invalid, []string{
			`t.yaml:2: unknown key "x\x1b[2J"`, `t.yaml:3: task "a": bad\nrunner: forged`}},
		{"a wrapped list keeps what wraps it", fmt.Errorf("load tasks\x07: %w (see above)", invalid), []string{
			`load tasks\a: t.yaml:2: unknown key "x\x1b[2J"`, `t.yaml:3: task "a": bad\nrunner: forged (see above)`}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := ErrorLines(tt.err)
			if strings.Join(got, "|") != strings.Join(tt.want, "|") {
				t.Errorf("ErrorLines = %q, want %q", got, tt.want)
			}
		})
	}
}
