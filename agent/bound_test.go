package agent

import (
	"context"
	"strings"
	"testing"

	"github.com/runner-dev/runner/budget"
	"github.com/runner-dev/runner/internal/fakellm"
)

// Every reservation event names how its prompt bound was counted and the
// margin: the model's tokenizer where the price table names one, once the
// server's count agreed with it (the second call's), bytes before and
// elsewhere.
func TestRequestEventsNameTheBound(t *testing.T) {
	for _, tt := range []struct {
		tokenizer  budget.Tokenizer
		wantBy     []string
		wantMargin float64
	}{
		{budget.O200kBase, []string{"bytes", "bytes", "o200k_base"}, budget.TokenizerMargin},
		{budget.TokenizerBytes, []string{"bytes", "bytes", "bytes"}, 0},
	} {
		price := testPrice(t)
		price.Tokenizer = tt.tokenizer
		srv := fakellm.New(t,
			fakellm.ToolCall("run_command", `{"command":"ls"}`).WithUsage(1000, 10, 0),
			fakellm.ToolCall("run_command", `{"command":"ls"}`).WithUsage(1050, 10, 0),
			fakellm.ToolCall("complete", `{"summary":"done"}`).WithUsage(1100, 10, 0))
		meter, _ := budget.NewMeter(1, nil)
		a, traj := newTestAgent(t, srv, newMemSandbox(nil), Config{Meter: meter, Price: price})
		if out := a.Run(context.Background()); out.Status != StatusCompleted {
			t.Fatalf("%s: outcome %+v", tt.wantBy, out)
		}
		var by []string
		for _, e := range events(t, traj) {
			switch e.Type {
			case EventRequest:
				by = append(by, e.BoundTokenizer)
				if margin := map[bool]float64{true: tt.wantMargin}[e.BoundTokenizer != "bytes"]; e.BoundMargin != margin {
					t.Errorf("request bounded by %q with margin %v; want margin %v", e.BoundTokenizer, e.BoundMargin, margin)
				}
			case EventResponse:
				if e.ReservedUSD <= 0 || e.CostUSD <= 0 || e.CostUSD > e.ReservedUSD || e.PromptBound <= 0 {
					t.Errorf("response shows reserved $%v, charged $%v, bound %d; want both, charged within reserved",
						e.ReservedUSD, e.CostUSD, e.PromptBound)
				}
			}
		}
		if strings.Join(by, ",") != strings.Join(tt.wantBy, ",") {
			t.Errorf("requests bounded by %v, want %v", by, tt.wantBy)
		}
	}
}

// A server that counts more prompt tokens than the tokenizer bound allowed
// for the same messages makes the task bound by bytes from then on, and
// the trajectory says why: before the tokenizer was trusted (its trial
// bound passed) or after.
func TestServerCountAboveBoundFallsBackToBytes(t *testing.T) {
	// The new messages of each call (a short call and its short result)
	// are bounded by a few dozen tokens; the server says 3,000.
	for _, tt := range []struct {
		name   string
		counts []int64
		wantBy string
		want   string
	}{
		{"in the trial", []int64{1000, 4000, 4100, 4200}, "bytes,bytes,bytes,bytes", "bound would have been"},
		{"once trusted", []int64{1000, 1050, 4050, 4100}, "bytes,bytes,o200k_base,bytes", "o200k_base bound was"},
	} {
		var turns []fakellm.Turn
		for i, c := range tt.counts {
			turn := fakellm.ToolCall("run_command", `{"command":"ls"}`)
			if i == len(tt.counts)-1 {
				turn = fakellm.ToolCall("complete", `{"summary":"done"}`)
			}
			turns = append(turns, turn.WithUsage(c, 10, 0))
		}
		srv := fakellm.New(t, turns...)
		meter, _ := budget.NewMeter(1, nil)
		a, traj := newTestAgent(t, srv, newMemSandbox(nil), Config{Meter: meter})
		if out := a.Run(context.Background()); out.Status != StatusCompleted {
			t.Fatalf("%s: outcome %+v", tt.name, out)
		}
		var by []string
		var why []string
		for _, e := range events(t, traj) {
			switch e.Type {
			case EventRequest:
				by = append(by, e.BoundTokenizer)
			case EventBound:
				why = append(why, e.Text)
			}
		}
		if strings.Join(by, ",") != tt.wantBy {
			t.Errorf("%s: requests bounded by %v; want %s", tt.name, by, tt.wantBy)
		}
		if len(why) != 1 || !strings.Contains(why[0], tt.want) || !strings.Contains(why[0], "bounded by their bytes from now on") {
			t.Errorf("%s: bound events %q; want one saying what the server counted", tt.name, why)
		}
	}
}

// When a step no longer fits without the reserve kept for the final call,
// the model is told once how much is left, and may spend the reserve.
func TestFinalNoticeOnce(t *testing.T) {
	// gpt-4o-mini: 150 n$ a prompt token, 600 a completion token. A call
	// reporting 1,000 + 10 tokens costs 156,000 n$; a cap of 5,000,000
	// with 10% kept back pays for about 27 calls, then the reserve for 3.
	srv := fakellm.New(t)
	srv.Forever(fakellm.ToolCall("run_command", `{"command":"ls"}`).WithUsage(1000, 10, 0))
	meter, _ := budget.NewMeter(0.005, nil)
	a, traj := newTestAgent(t, srv, newMemSandbox(nil), Config{Meter: meter, FinalReserve: 0.1})
	out := a.Run(context.Background())
	if out.Status != StatusBudgetExhausted {
		t.Fatalf("outcome %+v, want budget_exhausted", out)
	}
	var notices []int // request indexes whose last message is the notice
	for i, r := range srv.Requests() {
		n := 0
		for _, m := range r.Messages {
			if strings.HasPrefix(m.Content, "Budget notice:") {
				n++
			}
		}
		if n > 1 {
			t.Fatalf("request %d carries %d budget notices, want at most 1", i+1, n)
		}
		if n == 1 && strings.HasPrefix(r.Messages[len(r.Messages)-1].Content, "Budget notice:") {
			notices = append(notices, i)
		}
	}
	if len(notices) != 1 || notices[0] < 10 {
		t.Fatalf("notice sent last in requests %v of %d; want in one, once the 90%% were spent", notices, len(srv.Requests()))
	}
	if after := len(srv.Requests()) - 1 - notices[0]; after < 1 {
		t.Errorf("%d calls after the notice: the reserve (10%% of the cap, three calls) was not spent", after)
	}
	var msg string
	for _, e := range events(t, traj) {
		if e.Type == EventMessage && e.Message != nil && strings.HasPrefix(e.Message.Content, "Budget notice:") {
			msg = e.Message.Content
		}
	}
	if !strings.Contains(msg, "of the $0.0050 budget is left") {
		t.Errorf("notice %q does not say what is left of the cap", msg)
	}
	if out.Spend.SpentUSD > 0.005 {
		t.Errorf("spent $%v of $0.005", out.Spend.SpentUSD)
	}
}

// The count the server reported for the history's first messages bounds
// nothing of a compaction's summary request, which is another
// conversation of as many messages: its bound is that of all it sends.
func TestCompactionRequestIsBoundedWhole(t *testing.T) {
	srv := fakellm.New(t,
		fakellm.Text("done").WithUsage(100, 5, 0),
		fakellm.ContextLengthExceeded(),
		fakellm.Text("the summary").WithUsage(900, 5, 0),
		fakellm.ToolCall("complete", `{"summary":"done"}`).WithUsage(300, 5, 0))
	meter, _ := budget.NewMeter(1, nil)
	a, traj := newTestAgent(t, srv, newMemSandbox(nil), Config{Meter: meter})
	if out := a.Run(context.Background()); out.Status != StatusCompleted {
		t.Fatalf("outcome %+v", out)
	}
	if out := a.Continue(context.Background(), "The check failed: "+strings.Repeat("FAIL x_test.go:12\n", 200)); out.Status != StatusCompleted {
		t.Fatalf("continued: outcome %+v", out)
	}
	var summary *fakellm.Request
	for _, r := range srv.Requests() {
		if len(r.Tools) == 0 {
			summary = &r
		}
	}
	if summary == nil {
		t.Fatal("no summary request was made")
	}
	for _, e := range events(t, traj) {
		if e.Type == EventRequest && e.Purpose == "compaction" && e.PromptBound < int64(len(summary.Body))/4 {
			t.Errorf("the summary request of %d bytes was bounded by %d tokens", len(summary.Body), e.PromptBound)
		}
	}
}
