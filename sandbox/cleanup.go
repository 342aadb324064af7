package sandbox

import "time"

// Leftover is a sandbox found by Backend.Cleanup.
type Leftover struct {
	ID, Name, Run, Task string
	Owner               Owner
	Deadline            time.Time
	State               string
	// Why is set when the container was removed: "owner dead",
	// "deadline passed" or "labels damaged".
	Why string
}

// CleanupReport lists what Cleanup removed and what it left alone.
type CleanupReport struct {
	Removed []Leftover
	Kept    []Leftover // sandboxes of live runs
}

// Reason says why l, found at time now, belongs to a run that is over and
// is to be removed ("deadline passed", "owner dead", "labels damaged"), or
// "" when it may belong to a live run. A zero Deadline means that the
// sandbox's labels could not be read: such a sandbox is removed only once
// it has stopped.
func (l Leftover) Reason(now time.Time) string {
	switch {
	case l.Deadline.IsZero() && l.State != StateRunning:
		return "labels damaged"
	case l.Deadline.IsZero():
		return ""
	case now.After(l.Deadline):
		return "deadline passed"
	case !l.Owner.Alive():
		return "owner dead"
	}
	return ""
}

// StateRunning is Leftover.State of a sandbox whose processes run.
const StateRunning = "running"
