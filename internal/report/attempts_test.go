package report

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/runner-dev/runner/gitops"
	"github.com/runner-dev/runner/tasks"
)

// A best-of-n task's page and terminal view list every attempt, the kept
// one marked, with what the attempts say escaped; its attempts' lines do
// not count their cost a second time.
func TestBestOfAttemptsShown(t *testing.T) {
	out := filepath.Join(t.TempDir(), "out")
	os.MkdirAll(filepath.Join(out, "trajectories"), 0o755)
	start := time.Date(2026, 12, 1, 10, 0, 0, 0, time.UTC)
	try := func(k int, status tasks.Status, cost float64, errText string) tasks.Result {
		return tasks.Result{ID: "best", Attempt: 1, Try: k, BestOf: 2, Status: status, Repo: "/src/app", CostUSD: cost,
			Branch: tasks.AttemptBranch("agent/best", k), Commit: strings.Repeat(string(rune('a'+k)), 40), Error: errText,
			StartedAt: start, FinishedAt: start.Add(time.Minute)}
	}
	lines := []tasks.Result{
		try(2, tasks.StatusSucceeded, 0.02, ""),
		try(1, tasks.StatusCancelled, 0.01, hostileError+terminalHostile),
	}
	task := tasks.Result{ID: "best", Attempt: 1, BestOf: 2, Kept: 2, Status: tasks.StatusSucceeded, Repo: "/src/app", CostUSD: 0.03,
		Branch: "agent/best", Commit: lines[0].Commit, StartedAt: start, FinishedAt: start.Add(time.Minute)}
	for _, l := range []tasks.Result{lines[1], lines[0]} {
		task.Tries = append(task.Tries, tasks.AttemptResult{Try: l.Try, Status: l.Status, CostUSD: l.CostUSD, Branch: l.Branch,
			Commit: l.Commit, Chosen: l.Try == 2, Attempt: 1, Error: l.Error})
	}
	var buf bytes.Buffer
	for _, r := range append(lines, task) {
		b, _ := json.Marshal(r)
		buf.Write(append(b, '\n'))
	}
	os.WriteFile(filepath.Join(out, tasks.ResultsFile), buf.Bytes(), 0o644)

	run, err := Load(out, nil)
	if err != nil {
		t.Fatal(err)
	}
	bt := run.Task("best")
	if len(bt.Attempts) != 1 || len(bt.Tries) != 2 || bt.Latest().Kept != 2 {
		t.Fatalf("loaded %d task lines and %d attempt lines, latest %+v", len(bt.Attempts), len(bt.Tries), bt.Latest())
	}
	if got := LatestTries(bt); len(got) != 2 || got[0].Try != 1 || got[1].Try != 2 {
		t.Errorf("LatestTries: %+v", got)
	}
	if s := run.Summarize(); s.SpentUSD < 0.0299 || s.SpentUSD > 0.0301 {
		t.Errorf("the run spent $%v, want the task's $0.03", s.SpentUSD)
	}

	var text bytes.Buffer
	if err := WriteText(&text, ReadAttempt(context.Background(), out, bt.Latest(), gitops.DiffLimits{}), TextOptions{Of: 1}); err != nil {
		t.Fatal(err)
	}
	noControls(t, text.String())
	for _, want := range []string{"attempts:  2, attempt 2 kept on agent/best", "  1. cancelled · $0.0100 · agent/best-attempt-1",
		"* 2. succeeded · $0.0200 · agent/best-attempt-2"} {
		if !strings.Contains(text.String(), want) {
			t.Errorf("the terminal view lacks %q:\n%s", want, text.String())
		}
	}
	if strings.Contains(text.String(), "\nbranch:    forged") {
		t.Errorf("an attempt's error passes for a line of the view:\n%s", text.String())
	}

	if err := Write(context.Background(), out, Options{Version: "test"}); err != nil {
		t.Fatal(err)
	}
	page := parsePage(t, filepath.Join(out, "report", "tasks", "best.html"))
	checkInert(t, "best-of page", page, 0)
	for _, want := range []string{"Attempts", "Attempt 1 of 2: cancelled", "Attempt 2 of 2: succeeded · kept", hostileError,
		"agent/best-attempt-1", "attempt 2 of 2, whose commit the branch got"} {
		if !strings.Contains(page.text, want) {
			t.Errorf("the page lacks %q:\n%s", want, page.text)
		}
	}
}
