package report

import (
	"fmt"
	"slices"

	"github.com/runner-dev/runner/tasks"
)

// LatestTries returns the lines of the attempts of a best-of-n task that
// its latest line sums up, by number; while that line is not written yet
// (the attempts are running, or the run stopped), the lines of attempts
// ended since.
func LatestTries(t *Task) []tasks.Result {
	latest := t.Latest()
	var out []tasks.Result
	if len(latest.Tries) > 0 {
		for _, s := range latest.Tries {
			for i := len(t.Tries) - 1; i >= 0; i-- {
				if r := t.Tries[i]; r.Try == s.Try && r.Attempt == s.Attempt {
					out = append(out, r)
					break
				}
			}
		}
		return out
	}
	for _, r := range t.Tries {
		if r.Attempt > latest.Attempt {
			out = append(out, r)
		}
	}
	slices.SortStableFunc(out, func(a, b tasks.Result) int { return a.Try - b.Try })
	return out
}

// attempts writes the attempts of a best-of-n task's line: each one's
// number, status, cost and branch, the kept one marked.
func (t *textWriter) attempts(r tasks.Result) {
	if r.Try > 0 {
		t.line("attempt:   %d of %d of a best-of-n task (its own branch; the task's line says which was kept)", r.Try, r.BestOf)
		return
	}
	if len(r.Tries) == 0 {
		return
	}
	kept := "none passed"
	if r.Kept > 0 {
		kept = fmt.Sprintf("attempt %d kept on %s", r.Kept, r.Branch)
	}
	t.line("attempts:  %d, %s", len(r.Tries), kept)
	for _, a := range r.Tries {
		mark := " "
		if a.Chosen {
			mark = "*"
		}
		branch := a.Branch
		if branch == "" {
			branch = "no branch"
		}
		t.line("  %s %d. %s · $%.4f · %s", mark, a.Try, t.paint(statusColor(a.Status), string(a.Status)), a.CostUSD, branch)
		if a.Error != "" {
			t.line("       %s", a.Error)
		}
	}
}
