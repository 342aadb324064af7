package tasks

import (
	"errors"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/runner-dev/runner/internal/policy"
)

// A continued task stays finished for a rerun whatever becomes of the
// continuation, and Current is the result a continuation goes on from.
func TestContinuationKeepsTaskFinished(t *testing.T) {
	tests := []struct {
		name string
		// after attempt 1 ended budget_exhausted and a continuation
		// (attempt 2) started:
		second      *Status // the continuation's result; nil: none recorded (crash)
		wantCurrent int     // the attempt Current returns
	}{
		{"continuation succeeded", ptr(StatusSucceeded), 2},
		{"continuation ran out again", ptr(StatusStepLimit), 2},
		{"continuation interrupted", ptr(StatusInterrupted), 1},
		{"continuation crashed before recording", nil, 1},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dir := t.TempDir()
			s := openStore(t, dir)
			if _, err := s.Start("a"); err != nil {
				t.Fatal(err)
			}
			if err := s.Record(result("a", StatusBudgetExhausted)); err != nil {
				t.Fatal(err)
			}
			n, err := s.StartContinuation("a", 1)
			if err != nil || n != 2 {
				t.Fatalf("StartContinuation = %d, %v; want 2", n, err)
			}
			if tt.second != nil {
				r := result("a", *tt.second)
				r.Continues = 1
				if err := s.Record(r); err != nil {
					t.Fatal(err)
				}
			}
			s.Close()
			// What a rerun sees.
			s = openStore(t, dir)
			if !s.Done("a") {
				t.Errorf("Done = false: a rerun would run the continued task again")
			}
			if got := s.Interrupted(); len(got) != 0 {
				t.Errorf("Interrupted = %v, want none", got)
			}
			fin, ok := s.Finished()["a"]
			if !ok || fin.Attempt != tt.wantCurrent {
				t.Errorf("Finished()[a] = attempt %d (found %v), want %d", fin.Attempt, ok, tt.wantCurrent)
			}
			cur, ok := s.Current("a")
			if !ok || cur.Attempt != tt.wantCurrent {
				t.Errorf("Current = attempt %d (found %v), want %d", cur.Attempt, ok, tt.wantCurrent)
			}
			if n, err := s.StartContinuation("a", cur.Attempt); err != nil || n != 3 {
				t.Errorf("next attempt = %d, %v; want 3", n, err)
			}
		})
	}
}

// An ordinary attempt that did not end still makes a rerun run the task.
func TestInterruptedRunAttemptStillReruns(t *testing.T) {
	s := openStore(t, t.TempDir())
	s.Start("a")
	s.Record(result("a", StatusBudgetExhausted))
	s.Start("a")
	if s.Done("a") {
		t.Errorf("Done = true for a task whose second (ordinary) attempt has no result")
	}
}

func TestStartContinuationNeedsAnAttempt(t *testing.T) {
	s := openStore(t, t.TempDir())
	if _, err := s.StartContinuation("a", 0); err == nil {
		t.Errorf("StartContinuation(a, 0) = nil error")
	}
}

func TestDefinitionRoundTrip(t *testing.T) {
	s := openStore(t, t.TempDir())
	push := true
	want := Task{
		ID: "fix-1", Repo: "https://user:hunter2@example.com/o/r.git", Ref: "main", Prompt: "fix it\x1b[31m",
		Branch: "agent/fix-1", Check: "make test", CheckRetries: 2, CheckTimeout: time.Minute, Image: "img:1",
		Model: "m", BudgetUSD: 0.5, MaxSteps: 7, Timeout: time.Hour, Network: NetworkBridge,
		Limits: Limits{Memory: 1 << 30, CPUs: 1.5}, Env: map[string]string{"A": "b"}, Push: &push,
		Policy: policy.Policy{Protected: []string{".github/"}, DenyCommands: []string{"^rm"}, HookTimeout: time.Second},
		Source: Source{File: "t.yaml", Line: 3},
	}
	if err := s.SaveDefinition(want); err != nil {
		t.Fatal(err)
	}
	got, err := s.LoadDefinition("fix-1")
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(got.Repo, "hunter2") {
		t.Errorf("the kept definition holds the URL's password: %s", got.Repo)
	}
	want.Repo = got.Repo
	if !reflect.DeepEqual(got, want) {
		t.Errorf("LoadDefinition = %+v\nwant %+v", got, want)
	}
}

func TestLoadDefinitionMissingNamesFile(t *testing.T) {
	dir := t.TempDir()
	s := openStore(t, dir)
	_, err := s.LoadDefinition("gone")
	if !errors.Is(err, ErrNoDefinition) || !strings.Contains(err.Error(), DefinitionPath(dir, "gone")) {
		t.Errorf("err = %v; want ErrNoDefinition naming %s", err, DefinitionPath(dir, "gone"))
	}
}

// A damaged results.jsonl whose attempt claims to continue itself does not
// send the store round in circles.
func TestContinuationCycleInResults(t *testing.T) {
	dir := t.TempDir()
	s := openStore(t, dir)
	r := result("a", StatusInterrupted)
	r.Attempt, r.Continues = 2, 2
	if err := s.Record(r); err != nil {
		t.Fatal(err)
	}
	if got, ok := s.Current("a"); !ok || got.Attempt != 2 {
		t.Errorf("Current = attempt %d (found %v), want 2", got.Attempt, ok)
	}
	if s.Done("a") {
		t.Errorf("Done = true for a task whose only attempt was interrupted")
	}
}
