// Package report reads what a run left in its out directory (results,
// trajectories, the branches in their repositories) and shows it to
// people: a static HTML report, and the views `runner show` prints.
//
// Everything shown comes from the agent or a repository and is untrusted:
// the HTML is made with html/template, whose contextual escaping keeps it
// text, under a Content-Security-Policy that runs no script but the
// report's own.
package report

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"time"

	"github.com/runner-dev/runner/internal/termsafe"
	"github.com/runner-dev/runner/tasks"
)

// MetaFile is the name, in an out directory, of the record of the latest
// run: when it started and ended, its budget and its queue.
const MetaFile = "run.json"

// Meta describes the latest run of an out directory.
type Meta struct {
	RunID        string    `json:"run_id"`
	StartedAt    time.Time `json:"started_at"`
	FinishedAt   time.Time `json:"finished_at,omitzero"`
	RunBudgetUSD float64   `json:"run_budget_usd,omitempty"`
	Concurrency  int       `json:"concurrency,omitempty"`
	// Queue lists the ids of the run's tasks, in queue order.
	Queue []string `json:"queue"`
}

// MarshalMeta is the content of run.json holding m.
func MarshalMeta(m Meta) ([]byte, error) {
	data, err := json.MarshalIndent(m, "", "  ")
	if err != nil {
		return nil, fmt.Errorf("write run record: %w", err)
	}
	return termsafe.JSON(append(data, '\n')), nil
}

// ReadMeta reads the run record of out directory dir; nil, nil when it
// has none.
func ReadMeta(dir string) (*Meta, error) { return readMeta(dir) }

// WriteMeta replaces the out directory's run record.
func WriteMeta(out string, m Meta) error {
	data, err := MarshalMeta(m)
	if err != nil {
		return err
	}
	if err := tasks.WriteFileAtomic(filepath.Join(out, MetaFile), data, 0o644); err != nil {
		return fmt.Errorf("write run record: %w", err)
	}
	return nil
}

// State is where a task of the report stands.
type State string

// The states of a task.
const (
	StateFinished State = "finished" // it has a result
	StateRunning  State = "running"  // the run that writes the report is working on it
	StateQueued   State = "queued"   // the run has not started it yet
	StateNotRun   State = "not_run"  // in the queue of a run that ended without it
)

// Live is what the run writing the report knows of a task it is running.
type Live struct {
	Phase    string
	Step     int
	SpentUSD float64
	Since    time.Time
}

// Task is one task of the out directory: its attempts, the latest last.
type Task struct {
	ID       string
	Attempts []tasks.Result
	// Tries are the lines of the attempts of a best-of-n task (see
	// tasks.Result.Try), in the order written; the task's own lines,
	// which count their cost, are in Attempts.
	Tries []tasks.Result
	State State
	// Live is set for a running task.
	Live *Live
}

// Latest is the task's last attempt; the zero Result if it has none.
func (t *Task) Latest() tasks.Result {
	if len(t.Attempts) == 0 {
		return tasks.Result{ID: t.ID}
	}
	return t.Attempts[len(t.Attempts)-1]
}

// Status is the latest attempt's status, or the task's state when it has
// no result yet.
func (t *Task) Status() string {
	if t.State != StateFinished {
		return string(t.State)
	}
	return string(t.Latest().Status)
}

// Run is an out directory as read for a report.
type Run struct {
	Dir  string
	Meta *Meta // nil when the directory has no run record
	// Tasks are in queue order, then in the order of their first result.
	Tasks []*Task
	// Warnings say what could not be read.
	Warnings []string
	// Now is when the directory was read.
	Now time.Time
}

// Task returns the task with the given id, or nil.
func (r *Run) Task(id string) *Task {
	for _, t := range r.Tasks {
		if t.ID == id {
			return t
		}
	}
	return nil
}

// Load reads the out directory dir without locking it, so that a report
// can be made while a run writes to it: a last line still being written
// is left out. live tells which tasks the run writing the report is
// working on; nil when no run is.
func Load(dir string, live map[string]Live) (*Run, error) {
	run := &Run{Dir: dir, Now: time.Now().UTC()}
	data, err := os.ReadFile(filepath.Join(dir, tasks.ResultsFile))
	if errors.Is(err, os.ErrNotExist) {
		if _, serr := os.Stat(dir); serr != nil {
			return nil, fmt.Errorf("read out directory: %w", serr)
		}
		data = nil
	} else if err != nil {
		return nil, fmt.Errorf("read results: %w", err)
	}
	if meta, err := readMeta(dir); err != nil {
		run.Warnings = append(run.Warnings, err.Error())
	} else {
		run.Meta = meta
	}
	byID := map[string]*Task{}
	task := func(id string) *Task {
		if t, ok := byID[id]; ok {
			return t
		}
		t := &Task{ID: id, State: StateQueued}
		byID[id] = t
		run.Tasks = append(run.Tasks, t)
		return t
	}
	if run.Meta != nil {
		for _, id := range run.Meta.Queue {
			if tasks.CheckID(id) == nil {
				task(id)
			}
		}
	}
	complete := bytes.Count(data, []byte("\n")) // lines ended by a newline
	for n, line := range bytes.Split(data, []byte("\n")) {
		if len(bytes.TrimSpace(line)) == 0 {
			continue
		}
		var r tasks.Result
		if err := json.Unmarshal(line, &r); err != nil || tasks.CheckID(r.ID) != nil {
			if n < complete { // not the line being written
				run.Warnings = append(run.Warnings, fmt.Sprintf("%s: line %d cannot be read; left out", tasks.ResultsFile, n+1))
			}
			continue
		}
		t := task(r.ID)
		if r.Try > 0 {
			t.Tries = append(t.Tries, r)
			continue
		}
		t.Attempts = append(t.Attempts, r)
		t.State = StateFinished
	}
	for _, t := range run.Tasks {
		slices.SortStableFunc(t.Attempts, func(a, b tasks.Result) int { return a.Attempt - b.Attempt })
		if l, ok := live[t.ID]; ok {
			t.State, t.Live = StateRunning, &l
			continue
		}
		if t.State == StateQueued && live == nil && (run.Meta == nil || !run.Meta.FinishedAt.IsZero()) {
			t.State = StateNotRun
		}
	}
	return run, nil
}

func readMeta(dir string) (*Meta, error) {
	data, err := os.ReadFile(filepath.Join(dir, MetaFile))
	if errors.Is(err, os.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("read %s: %w", MetaFile, err)
	}
	var m Meta
	if err := json.Unmarshal(data, &m); err != nil {
		return nil, fmt.Errorf("%s cannot be read (%v); the report leaves it out", MetaFile, err)
	}
	return &m, nil
}
