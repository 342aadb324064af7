package batch

import (
	"reflect"
	"testing"
	"time"

	"github.com/runner-dev/runner/internal/policy"
)

func TestWithPolicy(t *testing.T) {
	run := policy.Policy{Protected: []string{"src/", ".gitmodules"}, DenyCommands: []string{`git\s+push`}, Hook: "/run/hook", HookTimeout: time.Second}
	tests := []struct {
		name string
		task policy.Policy
		want policy.Policy
	}{
		{"empty task policy takes the run's",
			policy.Policy{},
			policy.Policy{Protected: []string{"src/", ".gitmodules"}, DenyCommands: []string{`git\s+push`}, Hook: "/run/hook", HookTimeout: time.Second}},
		{"lists are added to, without repeats; the task's hook wins",
			policy.Policy{Protected: []string{".gitmodules", "ci/**"}, DenyCommands: []string{"curl"}, Hook: "/task/hook", HookTimeout: time.Minute},
			policy.Policy{Protected: []string{".gitmodules", "ci/**", "src/"}, DenyCommands: []string{"curl", `git\s+push`}, Hook: "/task/hook", HookTimeout: time.Minute}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			taskProtected := append([]string(nil), tt.task.Protected...)
			got := withPolicy(tt.task, run)
			if !reflect.DeepEqual(got, tt.want) {
				t.Errorf("withPolicy:\n got %#v\nwant %#v", got, tt.want)
			}
			if len(taskProtected) > 0 && !reflect.DeepEqual(tt.task.Protected, taskProtected) {
				t.Errorf("withPolicy changed the task's list: %q", tt.task.Protected)
			}
		})
	}
	// The run's lists are not shared with the tasks.
	got := withPolicy(policy.Policy{}, run)
	got.Protected[0] = "changed"
	if run.Protected[0] == "changed" {
		t.Errorf("a task's policy shares the run's list")
	}
}
