package agent

import (
	"errors"
	"testing"
)

type failingWriter struct{}

func (failingWriter) Write([]byte) (int, error) { return 0, errors.New("disk full") }

// An observer hears every event in order, also once the file has failed.
func TestTrajectoryObserve(t *testing.T) {
	traj := NewTrajectory(failingWriter{}, "sk-observe-secret-1234")
	var got []string
	traj.Observe(func(e Event) { got = append(got, e.Type) })
	traj.Record(Event{Type: EventRequest, Step: 1})
	traj.Record(Event{Type: EventResponse, Step: 1, CostUSD: 0.5})
	traj.Record(Event{Type: EventStatus})
	if want := []string{EventRequest, EventResponse, EventStatus}; len(got) != len(want) || got[0] != want[0] || got[2] != want[2] {
		t.Errorf("observed %v, want %v", got, want)
	}
	if traj.Err() == nil {
		t.Errorf("the write error was not kept")
	}
	var none *Trajectory
	none.Observe(func(Event) {}) // a nil trajectory observes nothing and does not panic
}
