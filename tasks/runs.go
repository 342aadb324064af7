package tasks

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
)

// RunsDir, in an out directory, holds an empty file named after each run
// whose sandboxes may still exist: created before the run starts one,
// removed once they are all gone. A run killed before it could remove them
// (a second Ctrl-C, SIGKILL, a crash) leaves its file behind, and the next
// run on the out directory, which holds the lock and so knows that run is
// over, removes what it left.
const RunsDir = "runs"

// BeginRun records, durably, that run runID may start sandboxes.
func (s *Store) BeginRun(runID string) error {
	if err := checkRunID(runID); err != nil {
		return err
	}
	dir := filepath.Join(s.dir, RunsDir)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return fmt.Errorf("record run %s: %w", runID, err)
	}
	if err := WriteFileAtomic(filepath.Join(dir, runID), nil, 0o644); err != nil {
		return fmt.Errorf("record run %s: %w", runID, err)
	}
	return nil
}

// EndRun forgets run runID, once none of its sandboxes is left.
func (s *Store) EndRun(runID string) error {
	if err := checkRunID(runID); err != nil {
		return err
	}
	err := os.Remove(filepath.Join(s.dir, RunsDir, runID))
	if err != nil && !errors.Is(err, fs.ErrNotExist) {
		return fmt.Errorf("forget run %s: %w", runID, err)
	}
	return nil
}

// EarlierRuns lists, sorted, the runs recorded by BeginRun and not ended.
// Since the store holds the out directory's lock, none of them is running.
func (s *Store) EarlierRuns() ([]string, error) {
	entries, err := os.ReadDir(filepath.Join(s.dir, RunsDir))
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("list earlier runs: %w", err)
	}
	var ids []string
	for _, e := range entries {
		if e.Type().IsRegular() && checkRunID(e.Name()) == nil {
			ids = append(ids, e.Name())
		}
	}
	slices.Sort(ids)
	return ids, nil
}

// checkRunID refuses a run id that cannot name a file: run ids follow the
// rules of task ids.
func checkRunID(id string) error {
	if err := CheckID(id); err != nil {
		return fmt.Errorf("run %w", err)
	}
	return nil
}
