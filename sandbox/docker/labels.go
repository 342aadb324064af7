package docker

import (
	"strconv"
	"time"

	"github.com/runner-dev/runner/sandbox"
)

// Labels put on every sandbox container. They let Cleanup find the
// containers of dead runs without any state outside the engine.
const (
	LabelTool      = "dev.runner.tool" // always "runner"
	LabelRun       = "dev.runner.run"
	LabelTask      = "dev.runner.task"
	LabelOwnerHost = "dev.runner.owner.host"
	LabelOwnerPID  = "dev.runner.owner.pid"
	LabelOwnerAt   = "dev.runner.owner.start"
	LabelDeadline  = "dev.runner.deadline" // RFC 3339, UTC
	toolName       = "runner"
)

func labels(c sandbox.Config, owner sandbox.Owner, deadline time.Time) map[string]string {
	return map[string]string{
		LabelTool:      toolName,
		LabelRun:       c.RunID,
		LabelTask:      c.TaskID,
		LabelOwnerHost: owner.Host,
		LabelOwnerPID:  strconv.Itoa(owner.PID),
		LabelOwnerAt:   owner.Start,
		LabelDeadline:  deadline.UTC().Format(time.RFC3339),
	}
}

// ownerFromLabels reads back the Owner and deadline written by labels.
// ok is false when the labels are not runner's or are damaged.
func ownerFromLabels(l map[string]string) (o sandbox.Owner, deadline time.Time, ok bool) {
	if l[LabelTool] != toolName {
		return o, deadline, false
	}
	pid, err := strconv.Atoi(l[LabelOwnerPID])
	if err != nil {
		return o, deadline, false
	}
	deadline, err = time.Parse(time.RFC3339, l[LabelDeadline])
	if err != nil {
		return o, deadline, false
	}
	return sandbox.Owner{Host: l[LabelOwnerHost], PID: pid, Start: l[LabelOwnerAt]}, deadline, true
}
