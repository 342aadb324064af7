package report

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/runner-dev/runner/agent"
	"github.com/runner-dev/runner/tasks"
)

// An out directory is read while a run writes it: a last line being
// written is left out quietly, a broken line in the middle with a
// warning; the run record gives the queue, and the run's live tasks are
// running, the others queued or, once the run is over, not run.
func TestLoad(t *testing.T) {
	out := t.TempDir()
	line := func(r tasks.Result) string { b, _ := json.Marshal(r); return string(b) + "\n" }
	data := line(tasks.Result{ID: "b", Attempt: 1, Status: tasks.StatusInterrupted}) +
		"{not json\n" +
		line(tasks.Result{ID: "b", Attempt: 2, Status: tasks.StatusSucceeded, CostUSD: 0.5}) +
		line(tasks.Result{ID: "x", Attempt: 1, Status: tasks.StatusError, CostUSD: 0.25}) +
		`{"id":"c","attempt":1,"sta`
	os.WriteFile(filepath.Join(out, tasks.ResultsFile), []byte(data), 0o644)
	start := time.Date(2026, 12, 1, 10, 0, 0, 0, time.UTC)
	meta := Meta{RunID: "r1", StartedAt: start, RunBudgetUSD: 2, Queue: []string{"a", "b", "c", "../evil"}}
	if err := WriteMeta(out, meta); err != nil {
		t.Fatal(err)
	}
	run, err := Load(out, map[string]Live{"a": {Phase: "step", Step: 3, SpentUSD: 0.125}})
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, tk := range run.Tasks {
		got = append(got, tk.ID+"="+tk.Status())
	}
	if want := "a=running b=succeeded c=queued x=error"; strings.Join(got, " ") != want {
		t.Errorf("tasks = %s, want %s", strings.Join(got, " "), want)
	}
	if len(run.Warnings) != 1 || !strings.Contains(run.Warnings[0], "line 2") {
		t.Errorf("warnings = %q, want one for line 2", run.Warnings)
	}
	if b := run.Task("b"); len(b.Attempts) != 2 || b.Latest().Attempt != 2 {
		t.Errorf("b's attempts: %+v", b.Attempts)
	}
	s := run.Summarize()
	if s.SpentUSD != 0.875 || s.Succeeded != 1 || s.Failed != 1 || s.Running != 1 || s.Queued != 1 || s.RunBudgetUSD != 2 {
		t.Errorf("summary = %+v", s)
	}
	rows := run.Rows()
	if rows[0].Why != "step 3" || rows[0].Page != "" || rows[1].Page != "tasks/b.html" || rows[1].Attempts != 2 {
		t.Errorf("rows = %+v", rows)
	}

	meta.FinishedAt = start.Add(time.Hour)
	WriteMeta(out, meta)
	run, err = Load(out, nil)
	if err != nil {
		t.Fatal(err)
	}
	if a, c := run.Task("a"), run.Task("c"); a.State != StateNotRun || c.State != StateNotRun {
		t.Errorf("after the run: a %s, c %s; want both not run", a.State, c.State)
	}
	if s := run.Summarize(); s.Wall != time.Hour {
		t.Errorf("wall time %s, want 1h", s.Wall)
	}
	if _, err := Load(filepath.Join(out, "nowhere"), nil); err == nil {
		t.Errorf("a missing out directory was read")
	}
}

// A trajectory's huge or broken lines are left out with a note; texts
// are cut at a character boundary, and what was cut is counted.
func TestReadTimelineLimits(t *testing.T) {
	path := filepath.Join(t.TempDir(), "t.jsonl")
	f, _ := os.Create(path)
	traj := agent.NewTrajectory(f)
	traj.Record(agent.Event{Type: agent.EventTask, Text: strings.Repeat("é", maxText)})
	traj.Record(agent.Event{Type: agent.EventRequest, Step: 1})
	f.WriteString(`{"type":"response","step":1,"message":{"role":"assistant","content":"` + strings.Repeat("x", maxLine) + `"}}` + "\n")
	traj.Record(agent.Event{Type: agent.EventResponse, Step: 1, Message: &agent.WireMessage{Role: "assistant",
		ToolCalls: []agent.WireToolCall{{ID: "c1", Name: "write_file", Arguments: `{"path":"a"}`}}}})
	f.WriteString("not json\n")
	traj.Record(agent.Event{Type: agent.EventToolResult, Step: 1, Tool: "write_file",
		Message: &agent.WireMessage{Role: "tool", ToolCallID: "c1", Content: "ok"}})
	f.WriteString(`{"type":"status","sta`) // being written
	f.Close()
	tl, err := ReadTimeline(path)
	if err != nil {
		t.Fatal(err)
	}
	if len(tl.Prompt.Text) > maxText || !strings.HasSuffix(tl.Prompt.Text, "é") || tl.Prompt.Omitted != 2*maxText-len(tl.Prompt.Text) {
		t.Errorf("prompt kept %d bytes, omitted %d", len(tl.Prompt.Text), tl.Prompt.Omitted)
	}
	if len(tl.Notes) != 2 || !strings.Contains(tl.Notes[0], "longer than") || !strings.Contains(tl.Notes[1], "1 line(s)") {
		t.Errorf("notes = %q", tl.Notes)
	}
	if len(tl.Entries) != 1 || len(tl.Entries[0].Calls) != 1 || tl.Entries[0].Calls[0].Result.Text != "ok" {
		t.Errorf("entries = %+v", tl.Entries)
	}
}
