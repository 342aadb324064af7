package tasks

import (
	"path/filepath"
	"slices"
	"testing"
)

// A run recorded with BeginRun and not ended is listed by the next store
// opened on the out directory; EndRun forgets it.
func TestEarlierRuns(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "out")
	s, err := OpenStore(dir)
	if err != nil {
		t.Fatal(err)
	}
	for _, id := range []string{"20250101-000000-7", "20250101-000001-8"} {
		if err := s.BeginRun(id); err != nil {
			t.Fatal(err)
		}
	}
	if err := s.EndRun("20250101-000001-8"); err != nil {
		t.Fatal(err)
	}
	if err := s.BeginRun("../escape"); err == nil {
		t.Error("BeginRun accepted a run id that is a path")
	}
	s.Close()

	s, err = OpenStore(dir)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	got, err := s.EarlierRuns()
	if err != nil || !slices.Equal(got, []string{"20250101-000000-7"}) {
		t.Errorf("EarlierRuns = %v, %v; want the run that did not end", got, err)
	}
}
