package tasks

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"
)

func openStore(t *testing.T, dir string) *Store {
	t.Helper()
	s, err := OpenStore(dir)
	if err != nil {
		t.Fatalf("OpenStore: %v", err)
	}
	t.Cleanup(func() { s.Close() })
	return s
}

func result(id string, st Status) Result {
	start := time.Date(2025, 3, 1, 12, 0, 0, 0, time.UTC)
	return Result{
		ID: id, Status: st, Repo: "https://github.com/o/r.git", Ref: "main", Base: "abc123",
		Branch: "agent/" + id, CostUSD: 0.0123, Tokens: Tokens{In: 1000, Cached: 200, Out: 300},
		Calls: 4, Steps: 4, Duration: Duration(90 * time.Second), StartedAt: start,
		FinishedAt: start.Add(90 * time.Second), Summary: "done <ok> & fine",
	}
}

// fileLines returns the lines of results.jsonl, failing unless each is a
// complete JSON object.
func fileLines(t *testing.T, dir string) []string {
	t.Helper()
	data, err := os.ReadFile(filepath.Join(dir, ResultsFile))
	if err != nil {
		t.Fatal(err)
	}
	if len(data) > 0 && data[len(data)-1] != '\n' {
		t.Fatalf("results.jsonl does not end with a newline: %q", data)
	}
	var lines []string
	for _, l := range strings.SplitAfter(string(data), "\n") {
		if l == "" {
			continue
		}
		var m map[string]any
		if err := json.Unmarshal([]byte(l), &m); err != nil {
			t.Fatalf("line %q is not a JSON object: %v", l, err)
		}
		lines = append(lines, l)
	}
	return lines
}

func TestStoreRecordAndReload(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "out")
	s := openStore(t, dir)
	attempt, err := s.Start("a")
	if err != nil || attempt != 1 {
		t.Fatalf("Start: got %d, %v; want 1, nil", attempt, err)
	}
	a := result("a", StatusSucceeded)
	a.Questions = []string{"Which Go version?"}
	a.Commit, a.Pushed = "def456", true
	b := result("b", StatusError)
	b.Repo = "https://x-access-token:ghs_secret@github.com/o/r.git"
	b.Error = "git push https://x-access-token:ghs_secret@github.com/o/r.git: denied"
	for _, r := range []Result{a, b} {
		if err := s.Record(r); err != nil {
			t.Fatalf("Record: %v", err)
		}
	}
	if err := s.Close(); err != nil {
		t.Fatalf("Close: %v", err)
	}

	lines := fileLines(t, dir)
	if len(lines) != 2 {
		t.Fatalf("got %d lines, want 2", len(lines))
	}
	if strings.Contains(lines[1], "ghs_secret") {
		t.Errorf("credentials written to results: %s", lines[1])
	}
	if !strings.Contains(lines[0], `"summary":"done <ok> & fine"`) || !strings.Contains(lines[0], `"duration":"1m30s"`) {
		t.Errorf("line 1 = %s, want a readable summary and duration", lines[0])
	}

	wantA, wantB := a, b
	wantA.Attempt, wantB.Attempt = 1, 1 // filled in by Record
	wantB.Repo = "https://github.com/o/r.git"
	wantB.Error = "git push https://github.com/o/r.git: denied"
	wantB.Branch = "" // b committed nothing: no branch was made
	s2 := openStore(t, dir)
	if got := s2.Results(); !reflect.DeepEqual(got, []Result{wantA, wantB}) {
		t.Errorf("reloaded results:\n got %+v\nwant %+v", got, []Result{wantA, wantB})
	}
	if w := s2.Warnings(); len(w) != 0 {
		t.Errorf("warnings on a clean file: %q", w)
	}
}

func TestStoreRecordRefuses(t *testing.T) {
	s := openStore(t, t.TempDir())
	if err := s.Record(Result{ID: "a", Status: "done"}); err == nil {
		t.Errorf("Record with unknown status: got nil error")
	}
	if err := s.Record(Result{ID: "../a", Status: StatusSucceeded}); err == nil {
		t.Errorf("Record with unsafe id: got nil error")
	}
	if _, err := s.Start("a/b"); err == nil {
		t.Errorf("Start with unsafe id: got nil error")
	}
	s.Close()
	if err := s.Record(result("a", StatusSucceeded)); !errors.Is(err, ErrClosed) {
		t.Errorf("Record after Close: got %v, want ErrClosed", err)
	}
	if err := s.Close(); err != nil {
		t.Errorf("second Close: %v", err)
	}
}

// TestStoreRepairsTornTail simulates a crash in the middle of an append.
func TestStoreRepairsTornTail(t *testing.T) {
	good := func(id string) string {
		b, _ := json.Marshal(result(id, StatusSucceeded))
		return string(b) + "\n"
	}
	tests := []struct {
		name      string
		content   string
		wantIDs   []string
		wantKept  string // content of the file after OpenStore
		wantWarns []string
	}{
		{"partial last line", good("a") + `{"id":"b","sta`,
			[]string{"a"}, good("a"),
			[]string{"results.jsonl: line 2 is incomplete (the previous run stopped while writing it); dropping it"}},
		{"zeros after a crash", good("a") + "\x00\x00\x00\x00",
			[]string{"a"}, good("a"),
			[]string{"results.jsonl: line 2 is incomplete (the previous run stopped while writing it); dropping it"}},
		{"unreadable last line", good("a") + "{\"id\":\"b\",\x00\n",
			[]string{"a"}, good("a"),
			[]string{"results.jsonl: last line 2 cannot be read (the previous run stopped while writing it); dropping it"}},
		{"bad line in the middle is skipped but kept", good("a") + "garbage\n" + good("c"),
			[]string{"a", "c"}, good("a") + "garbage\n" + good("c"),
			[]string{"results.jsonl: skipping line 2, which cannot be read"}},
		{"clean file", good("a") + good("b"),
			[]string{"a", "b"}, good("a") + good("b"), nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dir := t.TempDir()
			path := filepath.Join(dir, ResultsFile)
			if err := os.WriteFile(path, []byte(tt.content), 0o644); err != nil {
				t.Fatal(err)
			}
			s := openStore(t, dir)
			var ids []string
			for _, r := range s.Results() {
				ids = append(ids, r.ID)
			}
			if !slices.Equal(ids, tt.wantIDs) {
				t.Errorf("loaded ids: got %q, want %q", ids, tt.wantIDs)
			}
			if got := s.Warnings(); !slices.Equal(got, tt.wantWarns) {
				t.Errorf("warnings:\n got %q\nwant %q", got, tt.wantWarns)
			}
			data, _ := os.ReadFile(path)
			if string(data) != tt.wantKept {
				t.Errorf("file after open:\n got %q\nwant %q", data, tt.wantKept)
			}

			// The next append starts on a line of its own.
			if err := s.Record(result("z", StatusCheckFailed)); err != nil {
				t.Fatalf("Record: %v", err)
			}
			s.Close()
			s2 := openStore(t, dir)
			all := s2.Results()
			if last := all[len(all)-1]; last.ID != "z" || last.Status != StatusCheckFailed {
				t.Errorf("last result after reopen: got %s %s, want z check_failed", last.ID, last.Status)
			}
			if len(all) != len(tt.wantIDs)+1 {
				t.Errorf("got %d results after append, want %d", len(all), len(tt.wantIDs)+1)
			}
		})
	}
}

func TestStoreConcurrentRecord(t *testing.T) {
	dir := t.TempDir()
	s := openStore(t, dir)
	const n = 64
	var wg sync.WaitGroup
	errs := make(chan error, n)
	for i := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			id := fmt.Sprintf("task-%02d", i)
			if _, err := s.Start(id); err != nil {
				errs <- err
				return
			}
			r := result(id, StatusSucceeded)
			r.Summary = strings.Repeat("x", 10_000) // larger than a pipe buffer
			errs <- s.Record(r)
			_ = s.Done(id)
			_ = s.Finished()
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		if err != nil {
			t.Fatalf("Record: %v", err)
		}
	}
	s.Close()
	if lines := fileLines(t, dir); len(lines) != n {
		t.Fatalf("got %d lines, want %d", len(lines), n)
	}
	s2 := openStore(t, dir)
	if got := len(s2.Finished()); got != n {
		t.Errorf("got %d finished tasks after reopen, want %d", got, n)
	}
	if got := s2.Interrupted(); len(got) != 0 {
		t.Errorf("interrupted: got %q, want none", got)
	}
}

// TestStoreResume plays a run that is stopped part-way, then checks what a
// rerun learns from the out directory.
func TestStoreResume(t *testing.T) {
	dir := t.TempDir()
	s := openStore(t, dir)
	must := func(err error) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
	}
	start := func(id string) {
		t.Helper()
		_, err := s.Start(id)
		must(err)
	}
	start("done")
	must(s.Record(result("done", StatusSucceeded)))
	start("crashed") // no result: the process died
	start("stopped")
	must(s.Record(result("stopped", StatusInterrupted)))
	start("failed")
	must(s.Record(result("failed", StatusCheckFailed)))
	start("retried")
	must(s.Record(result("retried", StatusModelError)))
	start("retried") // second attempt, cut short
	must(s.Record(result("unstarted", StatusSucceeded)))
	must(s.Close())

	rerun := openStore(t, dir)
	tests := []struct {
		id          string
		done        bool
		wantAttempt int // of the next Start
	}{
		{"done", true, 2},
		{"crashed", false, 2},
		{"stopped", false, 2},
		{"failed", true, 2},
		{"retried", false, 3},
		{"unstarted", true, 2},
		{"never-seen", false, 1},
	}
	for _, tt := range tests {
		if got := rerun.Done(tt.id); got != tt.done {
			t.Errorf("Done(%q) = %v, want %v", tt.id, got, tt.done)
		}
	}
	if got, want := rerun.Interrupted(), []string{"crashed", "retried", "stopped"}; !slices.Equal(got, want) {
		t.Errorf("Interrupted() = %q, want %q", got, want)
	}
	fin := rerun.Finished()
	var finIDs []string
	for id, r := range fin {
		finIDs = append(finIDs, id)
		if r.ID != id || !r.Status.Final() {
			t.Errorf("Finished()[%q] = %+v", id, r)
		}
	}
	slices.Sort(finIDs)
	if want := []string{"done", "failed", "unstarted"}; !slices.Equal(finIDs, want) {
		t.Errorf("Finished() ids = %q, want %q", finIDs, want)
	}
	for _, tt := range tests {
		got, err := rerun.Start(tt.id)
		if err != nil || got != tt.wantAttempt {
			t.Errorf("Start(%q) = %d, %v; want %d", tt.id, got, err, tt.wantAttempt)
		}
	}
	// A started attempt is no longer done until its result is recorded.
	if rerun.Done("done") {
		t.Errorf(`Done("done") after a new Start = true, want false`)
	}
	must(rerun.Record(result("done", StatusSucceeded)))
	if !rerun.Done("done") || rerun.Finished()["done"].Attempt != 2 {
		t.Errorf("after recording attempt 2: Done %v, attempt %d; want true, 2",
			rerun.Done("done"), rerun.Finished()["done"].Attempt)
	}
}

func TestStoreIgnoresLeftoverTempFiles(t *testing.T) {
	dir := t.TempDir()
	state := filepath.Join(dir, StateDir)
	if err := os.MkdirAll(state, 0o755); err != nil {
		t.Fatal(err)
	}
	leftover := filepath.Join(state, ".a.json.tmp-123")
	if err := os.WriteFile(leftover, []byte(`{"id":"a","att`), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(state, "b.json"), []byte("not json"), 0o644); err != nil {
		t.Fatal(err)
	}
	s := openStore(t, dir)
	if got := s.Interrupted(); len(got) != 0 {
		t.Errorf("Interrupted() = %q, want none", got)
	}
	if _, err := os.Stat(leftover); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("leftover temp file still there: %v", err)
	}
	if want := []string{"state/b.json cannot be read; ignoring it"}; !slices.Equal(s.Warnings(), want) {
		t.Errorf("warnings: got %q, want %q", s.Warnings(), want)
	}
}
