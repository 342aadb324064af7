package sandbox

import "time"

// Leftover is a sandbox container found by Cleanup.
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
	Kept    []Leftover // containers of live runs
}
