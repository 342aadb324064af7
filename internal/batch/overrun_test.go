package batch

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/runner-dev/runner/internal/dockertest"
	"github.com/runner-dev/runner/internal/fakellm"
	"github.com/runner-dev/runner/tasks"
)

// A server that reports more usage than a call's bound ends the task at
// once as budget_exhausted, with the overrun in its result; the tasks after
// it make no call.
func TestOverrunIsRecordedAndEndsTheRun(t *testing.T) {
	repo := fixtureRepo(t)
	store, err := tasks.OpenStore(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	defer store.Close()
	srv := fakellm.New(t, fakellm.ToolCall("list_files", `{"path":"."}`).WithUsage(3000, 1_000_000, 0))
	queue := []tasks.Task{{ID: "greedy", Prompt: "List."}, {ID: "after", Prompt: "List too."}}
	for i := range queue {
		queue[i].Repo, queue[i].Image, queue[i].Model, queue[i].BudgetUSD = repo, dockertest.Busybox(t), "gpt-4o-mini", 1
	}
	sum, err := Run(context.Background(), queue, Options{RunID: dockertest.RunID + "-overrun"}, deps(t, store, srv))
	if err != nil {
		t.Fatal(err)
	}
	greedy, after := sum.Results[0], sum.Results[1]
	if greedy.Status != tasks.StatusBudgetExhausted || greedy.OverrunUSD <= 0 || !strings.Contains(greedy.Error, "more usage than the call's bound") {
		t.Errorf("greedy = %+v; want budget_exhausted with the overrun recorded", greedy)
	}
	if after.Status != tasks.StatusBudgetExhausted || after.Calls != 0 || after.OverrunUSD != 0 {
		t.Errorf("after = %+v; want budget_exhausted without a call", after)
	}
	if n := len(srv.Requests()); n != 1 {
		t.Errorf("the server saw %d requests, want 1", n)
	}
	if sum.Spend.OverrunUSD != greedy.OverrunUSD {
		t.Errorf("the run's overrun $%v, want the task's $%v", sum.Spend.OverrunUSD, greedy.OverrunUSD)
	}
	lines, err := os.ReadFile(filepath.Join(store.Dir(), tasks.ResultsFile))
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(lines), `"overrun_usd":`) {
		t.Errorf("results.jsonl does not record the overrun:\n%s", lines)
	}
}
