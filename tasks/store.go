package tasks

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/runner-dev/runner/internal/redact"
	"github.com/runner-dev/runner/internal/termsafe"
)

// Names inside an out directory.
const (
	ResultsFile = "results.jsonl"
	StateDir    = "state"
	LockFile    = ".lock"
)

// Errors a caller of the store may branch on.
var (
	// ErrLocked: another run holds the out directory.
	ErrLocked = errors.New("out directory is in use by another run")
	// ErrClosed: the store was used after Close.
	ErrClosed = errors.New("store is closed")
)

// LockedError names the run that holds an out directory.
type LockedError struct {
	Path string
	// PID is the process holding the lock, 0 if unknown.
	PID int
}

func (e *LockedError) Error() string {
	holder := "pid unknown"
	if e.PID > 0 {
		holder = fmt.Sprintf("pid %d", e.PID)
	}
	return fmt.Sprintf("%v (%s holds %s); wait for it to finish or choose another out directory", ErrLocked, holder, e.Path)
}

func (e *LockedError) Unwrap() error { return ErrLocked }

// Store is the record of a run in its out directory: results.jsonl, with one
// Result per line, and a started marker per task under state/, from which a
// rerun learns what is finished and what was interrupted. One process at a
// time may hold a store; its methods are safe for concurrent use.
type Store struct {
	dir  string
	lock *os.File

	mu       sync.Mutex
	results  *os.File // opened with O_APPEND
	size     int64    // of results.jsonl, all lines complete
	all      []Result
	latest   map[string]Result
	started  map[string]marker
	warnings []string
	closed   bool
}

// marker is the content of state/<id>.json, written when an attempt starts.
type marker struct {
	ID        string    `json:"id"`
	Attempt   int       `json:"attempt"`
	StartedAt time.Time `json:"started_at"`
	PID       int       `json:"pid"`
	// Continues is the attempt a continuation goes on from; 0 otherwise.
	Continues int `json:"continues,omitempty"`
}

// OpenStore opens the out directory dir, creating it if needed, and locks
// it; it fails with an error wrapping ErrLocked (a *LockedError) if another
// run holds it. It loads the results already recorded: a last line left
// incomplete by a crash is dropped from the file, and lines that cannot be
// read are skipped, each with a warning (see Warnings).
func OpenStore(dir string) (*Store, error) {
	if err := os.MkdirAll(filepath.Join(dir, StateDir), 0o755); err != nil {
		return nil, fmt.Errorf("open store: %w", err)
	}
	lock, err := lockFile(filepath.Join(dir, LockFile))
	if err != nil {
		return nil, fmt.Errorf("open store %s: %w", dir, err)
	}
	s := &Store{dir: dir, lock: lock, latest: map[string]Result{}, started: map[string]marker{}}
	if err := s.loadResults(); err != nil {
		lock.Close()
		return nil, fmt.Errorf("open store: %w", err)
	}
	if err := s.loadMarkers(); err != nil {
		s.results.Close()
		lock.Close()
		return nil, fmt.Errorf("open store: %w", err)
	}
	return s, nil
}

// loadResults reads results.jsonl and repairs a torn last line.
func (s *Store) loadResults() error {
	path := filepath.Join(s.dir, ResultsFile)
	_, statErr := os.Stat(path)
	f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE|os.O_APPEND, 0o644)
	if err != nil {
		return fmt.Errorf("open results: %w", err)
	}
	if errors.Is(statErr, os.ErrNotExist) {
		if err := syncDir(s.dir); err != nil {
			f.Close()
			return err
		}
	}
	data, err := os.ReadFile(path)
	if err != nil {
		f.Close()
		return fmt.Errorf("read results: %w", err)
	}
	s.results = f
	good := 0 // length of the prefix made of complete, readable lines
	for lineNo, off := 1, 0; off < len(data); lineNo++ {
		end := bytes.IndexByte(data[off:], '\n')
		if end < 0 {
			s.warnf("%s: line %d is incomplete (the previous run stopped while writing it); dropping it", ResultsFile, lineNo)
			break
		}
		line := data[off : off+end]
		off += end + 1
		var r Result
		if err := json.Unmarshal(line, &r); err != nil || r.ID == "" {
			if off == len(data) {
				if len(bytes.TrimSpace(line)) > 0 {
					s.warnf("%s: last line %d cannot be read (the previous run stopped while writing it); dropping it", ResultsFile, lineNo)
				}
				break
			}
			if len(bytes.TrimSpace(line)) > 0 {
				s.warnf("%s: skipping line %d, which cannot be read", ResultsFile, lineNo)
			}
			good = off
			continue
		}
		s.add(r)
		good = off
	}
	if good < len(data) {
		if err := f.Truncate(int64(good)); err != nil {
			return fmt.Errorf("repair results: %w", err)
		}
		if err := f.Sync(); err != nil {
			return fmt.Errorf("repair results: %w", err)
		}
	}
	s.size = int64(good)
	return nil
}

// loadMarkers reads the started markers and removes the temporary files a
// crash may have left beside them.
func (s *Store) loadMarkers() error {
	dir := filepath.Join(s.dir, StateDir)
	entries, err := os.ReadDir(dir)
	if err != nil {
		return fmt.Errorf("read state: %w", err)
	}
	for _, e := range entries {
		name := e.Name()
		if strings.HasPrefix(name, ".") && strings.Contains(name, ".tmp-") {
			os.Remove(filepath.Join(dir, name))
			continue
		}
		id, ok := strings.CutSuffix(name, ".json")
		if !ok || !e.Type().IsRegular() {
			continue
		}
		data, err := os.ReadFile(filepath.Join(dir, name))
		if err != nil {
			return fmt.Errorf("read state: %w", err)
		}
		var m marker
		if err := json.Unmarshal(data, &m); err != nil || m.ID != id || m.Attempt < 1 {
			s.warnf("%s/%s cannot be read; ignoring it", StateDir, name)
			continue
		}
		s.started[id] = m
	}
	return nil
}

func (s *Store) warnf(format string, args ...any) {
	s.warnings = append(s.warnings, fmt.Sprintf(format, args...))
}

// add takes r into the in-memory view; the caller holds mu or owns s.
// The line of one attempt of a best-of-n task does not stand for the task.
func (s *Store) add(r Result) {
	s.all = append(s.all, r)
	if r.Try > 0 {
		return
	}
	if prev, ok := s.latest[r.ID]; !ok || r.Attempt >= prev.Attempt {
		s.latest[r.ID] = r
	}
}

// Dir is the out directory.
func (s *Store) Dir() string { return s.dir }

// Warnings describes what OpenStore repaired or skipped; the caller shows
// them to the user.
func (s *Store) Warnings() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return slices.Clone(s.warnings)
}

// Start records that a new attempt at task id begins, durably, before any
// work is done, and returns its number: one more than any attempt started
// or recorded before.
func (s *Store) Start(id string) (attempt int, err error) {
	return s.start(id, 0)
}

// StartContinuation is Start for an attempt that goes on from attempt
// from (see Result.Continues). Until it records a final result, the task
// stands where attempt from left it: a rerun does not run it again, and
// an interrupted continuation leaves the earlier result in force.
func (s *Store) StartContinuation(id string, from int) (attempt int, err error) {
	if from < 1 {
		return 0, fmt.Errorf("start task %s: no attempt to continue", id)
	}
	return s.start(id, from)
}

func (s *Store) start(id string, continues int) (attempt int, err error) {
	if err := CheckID(id); err != nil {
		return 0, fmt.Errorf("start task: %w", err)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return 0, fmt.Errorf("start task %s: %w", id, ErrClosed)
	}
	attempt = max(s.started[id].Attempt, s.latest[id].Attempt) + 1
	m := marker{ID: id, Attempt: attempt, StartedAt: time.Now().UTC(), PID: os.Getpid(), Continues: continues}
	data, err := json.Marshal(m)
	if err != nil {
		return 0, fmt.Errorf("start task %s: %w", id, err)
	}
	if err := WriteFileAtomic(filepath.Join(s.dir, StateDir, id+".json"), append(data, '\n'), 0o644); err != nil {
		return 0, fmt.Errorf("start task %s: %w", id, err)
	}
	s.started[id] = m
	return attempt, nil
}

// Record appends r to results.jsonl as one line, written in a single append
// and synced before Record returns. The repo URL loses its credentials,
// and the error and the summary their URL credentials and credential
// shapes (redact); hiding the run's secret values is the caller's part. A zero Attempt is filled in with the attempt last started
// for the task (or one more than the last recorded, if none was started).
func (s *Store) Record(r Result) error {
	if err := CheckID(r.ID); err != nil {
		return fmt.Errorf("record result: %w", err)
	}
	if !r.Status.Valid() {
		return fmt.Errorf("record result %s: unknown status %q", r.ID, r.Status)
	}
	r.Repo = redact.URL(r.Repo)
	var shapes *redact.Redactor // no secret values: URLs and shapes only
	r.Error, r.Summary = shapes.String(r.Error), shapes.String(r.Summary)
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return fmt.Errorf("record result %s: %w", r.ID, ErrClosed)
	}
	if r.Attempt == 0 {
		r.Attempt = s.started[r.ID].Attempt
		if r.Attempt == 0 {
			r.Attempt = s.latest[r.ID].Attempt + 1
		}
	}
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(r); err != nil { // one line, ending in '\n'
		return fmt.Errorf("record result %s: %w", r.ID, err)
	}
	line := termsafe.JSON(buf.Bytes()) // `cat results.jsonl` shows, and obeys, no control
	if _, err := s.results.Write(line); err != nil {
		// Cut a partial line off so that the next append starts clean.
		if terr := s.results.Truncate(s.size); terr != nil {
			err = errors.Join(err, terr)
		}
		return fmt.Errorf("record result %s: %w", r.ID, err)
	}
	if err := s.results.Sync(); err != nil {
		return fmt.Errorf("record result %s: sync: %w", r.ID, err)
	}
	s.size += int64(len(line))
	s.add(r)
	return nil
}

// done tells whether id's last attempt ended with a final result; a
// continuation that did not (it was interrupted, or is running, or
// crashed before recording) leaves the task as the attempt it continued
// ended. The caller holds mu.
func (s *Store) done(id string) bool {
	r, ok := s.current(id)
	m := s.started[id]
	return ok && r.Status.Final() && (r.Attempt >= m.Attempt || m.Continues > 0)
}

// current is the result that stands for task id: its latest, or, when
// that is a continuation that was interrupted, the result it continued.
// The caller holds mu.
func (s *Store) current(id string) (Result, bool) {
	r, ok := s.latest[id]
	// An attempt continues an earlier one only: a line that says
	// otherwise (a damaged file) ends the walk.
	for ok && r.Continues > 0 && r.Continues < r.Attempt && !r.Status.Final() {
		r, ok = s.attempt(id, r.Continues)
	}
	return r, ok
}

// attempt finds the recorded result of one attempt; the caller holds mu.
func (s *Store) attempt(id string, n int) (Result, bool) {
	for i := len(s.all) - 1; i >= 0; i-- {
		if s.all[i].ID == id && s.all[i].Attempt == n {
			return s.all[i], true
		}
	}
	return Result{}, false
}

// Current returns the result that stands for task id (see done): the one
// `runner continue` goes on from.
func (s *Store) Current(id string) (Result, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.current(id)
}

// Done reports whether task id has a final result from its last attempt, so
// that a rerun skips it.
func (s *Store) Done(id string) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.done(id)
}

// Finished returns, for each task that is Done, its last result.
func (s *Store) Finished() map[string]Result {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := map[string]Result{}
	for id := range s.latest {
		if s.done(id) {
			out[id], _ = s.current(id)
		}
	}
	return out
}

// Interrupted returns, sorted, the tasks whose last attempt started but did
// not end with a final result: the run stopped (or crashed) during them.
func (s *Store) Interrupted() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	var ids []string
	for id := range s.started {
		if !s.done(id) {
			ids = append(ids, id)
		}
	}
	slices.Sort(ids)
	return ids
}

// Results returns every recorded result, in file order.
func (s *Store) Results() []Result {
	s.mu.Lock()
	defer s.mu.Unlock()
	return slices.Clone(s.all)
}

// Close closes results.jsonl and releases the out directory. It is
// idempotent.
func (s *Store) Close() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return nil
	}
	s.closed = true
	err := s.results.Close()
	if lerr := s.lock.Close(); lerr != nil && err == nil {
		err = lerr
	}
	if err != nil {
		return fmt.Errorf("close store: %w", err)
	}
	return nil
}
