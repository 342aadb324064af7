package tasks

import (
	"os"
	"path/filepath"
	"testing"
)

// Results written before a result named only a created branch are read
// without the branch that was never made; the rest of the line is kept,
// and a rerun still skips the finished task.
func TestStoreReadsOldResultsWithoutUncreatedBranch(t *testing.T) {
	dir := t.TempDir()
	lines := `{"id":"refused","attempt":1,"status":"policy_violation","repo":"/r","branch":"agent/refused","pushed":false,"cost_usd":0.5,"tokens":{"in":1,"cached":0,"out":2},"calls":1,"steps":3,"duration":"1s","started_at":"2025-01-01T00:00:00Z","finished_at":"2025-01-01T00:00:01Z","error":"not committed"}
{"id":"done","attempt":1,"status":"succeeded","repo":"/r","branch":"agent/done","commit":"0123456789abcdef0123456789abcdef01234567","pushed":false,"cost_usd":0,"tokens":{"in":0,"cached":0,"out":0},"calls":0,"steps":1,"duration":"1s","started_at":"2025-01-01T00:00:00Z","finished_at":"2025-01-01T00:00:01Z"}
`
	if err := os.WriteFile(filepath.Join(dir, ResultsFile), []byte(lines), 0o644); err != nil {
		t.Fatal(err)
	}
	s, err := OpenStore(dir)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	if w := s.Warnings(); len(w) > 0 {
		t.Errorf("warnings: %q", w)
	}
	got := s.Finished()
	if r := got["refused"]; r.Branch != "" || r.Status != StatusPolicyViolation || r.Steps != 3 || r.CostUSD != 0.5 || r.Error != "not committed" {
		t.Errorf("refused = %+v, want it whole but without a branch", r)
	}
	if r := got["done"]; r.Branch != "agent/done" || r.Commit == "" {
		t.Errorf("done = %+v, want its branch and commit", r)
	}
}
