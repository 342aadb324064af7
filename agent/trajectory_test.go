package agent

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"strings"
	"testing"

	"github.com/runner-dev/runner/budget"
	"github.com/runner-dev/runner/internal/fakellm"
	"github.com/runner-dev/runner/sandbox"
)

func events(t *testing.T, traj *bytes.Buffer) []Event {
	t.Helper()
	var out []Event
	sc := bufio.NewScanner(bytes.NewReader(traj.Bytes()))
	sc.Buffer(nil, 16<<20)
	for sc.Scan() {
		var e Event
		if err := json.Unmarshal(sc.Bytes(), &e); err != nil {
			t.Fatalf("trajectory line %q: %v", sc.Text(), err)
		}
		out = append(out, e)
	}
	return out
}

// The trajectory keeps every event, with secrets redacted, and replays as
// a model that drives the same run again.
func TestTrajectoryRecordsRedactsAndReplays(t *testing.T) {
	script := []fakellm.Turn{
		fakellm.ToolCall("run_command", `{"command":"env"}`).WithUsage(900, 30, 0),
		fakellm.ToolCall("write_file", `{"path":"out.txt","content":"token ghp_abcdefghijklmnopqrstuvwxyz0123456789"}`).WithUsage(1000, 40, 800),
		fakellm.ToolCall("complete", `{"summary":"done with `+testKey+`"}`).WithUsage(1100, 20, 900),
	}
	sb := newMemSandbox(nil)
	sb.exec = func(string) (sandbox.ExecResult, error) {
		return sandbox.ExecResult{Output: "OPENAI_API_KEY=" + testKey + "\nHOME=/home/sandbox\n"}, nil
	}
	srv := fakellm.New(t, script...)
	a, traj := newTestAgent(t, srv, sb, Config{})
	first := a.Run(context.Background())
	if first.Status != StatusCompleted {
		t.Fatalf("outcome = %+v", first)
	}
	text := traj.String()
	for _, secret := range []string{testKey, "ghp_abcdefghijklmnopqrstuvwxyz0123456789"} {
		if strings.Contains(text, secret) {
			t.Errorf("trajectory contains the secret %q", secret)
		}
	}
	counts := map[string]int{}
	for _, e := range events(t, traj) {
		counts[e.Type]++
	}
	want := map[string]int{EventTask: 1, EventMessage: 2, EventRequest: 3, EventResponse: 3, EventToolResult: 3, EventStatus: 1}
	for typ, n := range want {
		if counts[typ] != n {
			t.Errorf("%d %s events, want %d (all: %v)", counts[typ], typ, n, counts)
		}
	}

	// Replay: the same run, with no server at all.
	replay, err := ReadReplay(bytes.NewReader(traj.Bytes()))
	if err != nil {
		t.Fatal(err)
	}
	sb2 := newMemSandbox(nil)
	second := New(replay, sb2, Task{ID: "t1", Prompt: "Fix the typo in README.md."},
		Config{Model: "gpt-4o-mini", Price: testPrice(t)}).Run(context.Background())
	if second.Status != first.Status || second.Steps != first.Steps || second.Spend.Usage != first.Spend.Usage {
		t.Errorf("replayed outcome %+v differs from the recorded %+v", second, first)
	}
	if got := sb2.file("out.txt"); !strings.HasPrefix(got, "token ") {
		t.Errorf("replay did not write out.txt: %q", got)
	}
	if _, err := replay.Complete(context.Background(), Request{}); err == nil || !strings.Contains(err.Error(), "all 3 recorded replies were used") {
		t.Errorf("replay past its end: %v", err)
	}
}

// max_completion_tokens is lowered to what the budget can pay, and a reply
// without usage is charged at the bounds: the whole reservation, since a
// reply's hidden reasoning tokens are billed but not seen. Here that was all
// the budget had left.
func TestBudgetClampAndMissingUsage(t *testing.T) {
	price := testPrice(t)
	meter, _ := budget.NewMeter(0.01, nil)
	srv := fakellm.New(t, fakellm.ToolCall("run_command", `{"command":"ls"}`).WithoutUsage())
	a, traj := newTestAgent(t, srv, newMemSandbox(nil), Config{Meter: meter, MaxCompletionTokens: 20000})
	out := a.Run(context.Background())
	if out.Status != StatusBudgetExhausted || len(srv.Requests()) != 1 {
		t.Fatalf("outcome = %+v after %d calls, want budget_exhausted after 1", out, len(srv.Requests()))
	}
	reqs := srv.Requests()
	first := *reqs[0].MaxCompletionTokens
	if first >= 20000 || first < 256 {
		t.Errorf("max_completion_tokens = %d; want it clamped below 20000 by a $0.01 budget", first)
	}
	// What was held must cover prompt bound + granted completion, and fit the cap.
	var req Event
	var resp Event
	for _, e := range events(t, traj) {
		if e.Type == EventRequest && req.Type == "" {
			req = e
		}
		if e.Type == EventResponse && resp.Type == "" {
			resp = e
		}
	}
	if held := price.Bound(req.PromptBound, req.MaxCompletionTokens); held.USD() > 0.01 || held.USD() != req.ReservedUSD {
		t.Errorf("reservation %s (recorded $%v) passes the cap or is misrecorded", held, req.ReservedUSD)
	}
	if !resp.UsageEstimated || !resp.ChargedAtBound || resp.CostUSD != req.ReservedUSD {
		t.Errorf("response without usage: estimated %v, charged at bound %v, cost $%v; want both marked and the $%v held charged",
			resp.UsageEstimated, resp.ChargedAtBound, resp.CostUSD, req.ReservedUSD)
	}
	if want := price.Bound(req.PromptBound, req.MaxCompletionTokens); budget.Nanodollars(out.Spend.SpentNanodollars) != want {
		t.Errorf("spent %d nanodollars, want the call's bound %s", out.Spend.SpentNanodollars, want)
	}
	if out.Spend.SpentUSD > 0.01 {
		t.Errorf("spent $%v of $0.01", out.Spend.SpentUSD)
	}
}

// Every line stays JSON, with its secrets masked, that a terminal can
// show, whatever the secrets and the text: a secret spelled with quotes
// and backslashes, one that is JSON punctuation itself, a private key cut
// off, control sequences.
func TestTrajectoryLinesStayValidAndSafe(t *testing.T) {
	const (
		quoted      = `pa"ss\word-1`
		punctuation = `","type":"`
	)
	var buf bytes.Buffer
	traj := NewTrajectory(&buf, quoted, punctuation)
	contents := []string{
		"password " + quoted + " and " + punctuation + " here",
		"key -----BEGIN RSA PRIVATE KEY-----\nMIIEow\nAAAA",
		"title \x1b]0;pwned\a clip \x1b]52;c;cHduZWQ=\a csi \u009b2J bidi \u202eevil",
	}
	for _, c := range contents {
		traj.Record(Event{Type: EventMessage, Message: &WireMessage{Role: RoleUser, Content: c}, Arguments: c})
	}
	if err := traj.Err(); err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(strings.TrimSuffix(buf.String(), "\n"), "\n")
	if len(lines) != len(contents) {
		t.Fatalf("%d lines, want %d:\n%s", len(lines), len(contents), buf.String())
	}
	for i, line := range lines {
		var e Event
		if err := json.Unmarshal([]byte(line), &e); err != nil || e.Type != EventMessage || e.Message == nil {
			t.Fatalf("line %d is not the event: %v\n%s", i+1, err, line)
		}
		for _, s := range []string{quoted, punctuation, "MIIEow", "AAAA"} {
			if strings.Contains(e.Message.Content, s) || strings.Contains(e.Arguments, s) {
				t.Errorf("line %d keeps %q: %q", i+1, s, e.Message.Content)
			}
		}
		for _, c := range []string{"\x1b", "\a", "\u009b", "\u202e"} {
			if strings.Contains(line, c) {
				t.Errorf("line %d holds %q raw: %s", i+1, c, line)
			}
		}
	}
	var e Event
	json.Unmarshal([]byte(lines[2]), &e)
	if e.Message.Content != contents[2] {
		t.Errorf("the control sequences did not read back: %q", e.Message.Content)
	}
}
