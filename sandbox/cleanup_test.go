package sandbox_test

import (
	"os"
	"os/exec"
	"testing"
	"time"

	"github.com/runner-dev/runner/sandbox"
)

// deadOwner is the owner record of a process of this host that has exited.
func deadOwner(t *testing.T) sandbox.Owner {
	t.Helper()
	cmd := exec.CommandContext(t.Context(), "true")
	if err := cmd.Run(); err != nil {
		t.Fatal(err)
	}
	host, _ := os.Hostname()
	return sandbox.Owner{Host: host, PID: cmd.Process.Pid}
}

// Reason sorts sandboxes into those of runs that are over and the others.
func TestLeftoverReason(t *testing.T) {
	now := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	later, earlier := now.Add(time.Hour), now.Add(-time.Second)
	self := sandbox.Self()
	dead := deadOwner(t)
	elsewhere := sandbox.Owner{Host: "elsewhere", PID: 1}
	tests := []struct {
		name string
		l    sandbox.Leftover
		want string // "" for kept
	}{
		{"live owner", sandbox.Leftover{Owner: self, Deadline: later, State: "running"}, ""},
		{"dead owner", sandbox.Leftover{Owner: dead, Deadline: later, State: "running"}, "owner dead"},
		{"deadline passed, live owner", sandbox.Leftover{Owner: self, Deadline: earlier, State: "exited"}, "deadline passed"},
		{"other host before its deadline", sandbox.Leftover{Owner: elsewhere, Deadline: later, State: "running"}, ""},
		{"other host after its deadline", sandbox.Leftover{Owner: elsewhere, Deadline: earlier, State: "running"}, "deadline passed"},
		{"damaged labels, stopped", sandbox.Leftover{State: "exited"}, "labels damaged"},
		{"damaged labels, running", sandbox.Leftover{State: "running"}, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := tt.l.Reason(now); got != tt.want {
				t.Errorf("Reason = %q, want %q", got, tt.want)
			}
		})
	}
}
