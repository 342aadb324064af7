package main

import (
	"encoding/json"
	"errors"
	"fmt"
	"path/filepath"
	"strings"
	"testing"

	"github.com/runner-dev/runner/internal/cli"
	"github.com/runner-dev/runner/tasks"
)

func TestParseShard(t *testing.T) {
	env := func(vars map[string]string) func(string) string {
		return func(k string) string { return vars[k] }
	}
	tests := []struct {
		value   string
		env     map[string]string
		want    shard
		wantErr string
	}{
		{value: "0/1", want: shard{0, 1}},
		{value: "2/3", want: shard{2, 3}},
		{value: "auto/4", env: map[string]string{"JOB_COMPLETION_INDEX": "3"}, want: shard{3, 4}},
		{value: "3/3", wantErr: `--shard "3/3": I must be a whole number from 0 to 2`},
		{value: "-1/3", wantErr: `--shard "-1/3": I must be a whole number from 0 to 2`},
		{value: "1/0", wantErr: `--shard "1/0": N must be a whole number from 1 to 10000`},
		{value: "1", wantErr: `--shard "1": want I/N`},
		{value: "a/b", wantErr: `--shard "a/b": N must be`},
		{value: "auto/3", wantErr: `--shard "auto/3": auto takes the shard's index from $JOB_COMPLETION_INDEX, which is not set`},
		{value: "auto/3", env: map[string]string{"JOB_COMPLETION_INDEX": "5"},
			wantErr: `--shard "auto/3": I must be a whole number from 0 to 2 ($JOB_COMPLETION_INDEX is "5")`},
	}
	for _, tt := range tests {
		got, err := parseShard(tt.value, env(tt.env))
		if tt.wantErr != "" {
			var usage *cli.UsageError
			if err == nil || !errors.As(err, &usage) || !strings.HasPrefix(err.Error(), tt.wantErr) {
				t.Errorf("parseShard(%q) = %v, %v; want a usage error starting %q", tt.value, got, err, tt.wantErr)
			}
			continue
		}
		if err != nil || got != tt.want {
			t.Errorf("parseShard(%q) = %v, %v; want %v", tt.value, got, err, tt.want)
		}
	}
}

func idQueue(ids ...string) []tasks.Task {
	q := make([]tasks.Task, len(ids))
	for i, id := range ids {
		q[i] = tasks.Task{ID: id, Repo: "/repo", Branch: "agent/" + id}
	}
	return q
}

// Appending tasks, or reordering the queue, moves no task to another
// shard; every task is in exactly one shard.
func TestShardSplitStable(t *testing.T) {
	var ids []string
	for i := range 1000 {
		ids = append(ids, fmt.Sprintf("task-%04d", i))
	}
	const n = 7
	where := map[string]int{}
	for i := range n {
		for _, task := range (shard{i, n}).take(idQueue(ids[:600]...)) {
			if prev, ok := where[task.ID]; ok {
				t.Fatalf("task %s in shards %d and %d", task.ID, prev, i)
			}
			where[task.ID] = i
		}
	}
	if len(where) != 600 {
		t.Fatalf("the shards hold %d tasks, want 600", len(where))
	}
	reversed := idQueue(ids...)
	for i, j := 0, len(reversed)-1; i < j; i, j = i+1, j-1 {
		reversed[i], reversed[j] = reversed[j], reversed[i]
	}
	for i := range n {
		for _, task := range (shard{i, n}).take(reversed) {
			if prev, ok := where[task.ID]; ok && prev != i {
				t.Errorf("task %s moved from shard %d to %d when tasks were added", task.ID, prev, i)
			}
		}
	}
}

// 1,000 ids split 10 ways: no shard holds more than 1.5 times, nor less
// than half, its even share.
func TestShardSplitBalanced(t *testing.T) {
	var ids []string
	for i := range 1000 {
		ids = append(ids, fmt.Sprintf("fix-issue-%d", i+1))
	}
	for _, n := range []int{2, 3, 10} {
		even := 1000 / n
		for i := range n {
			got := len((shard{i, n}).take(idQueue(ids...)))
			if got > even*3/2 || got < even/2 {
				t.Errorf("shard %d/%d takes %d of 1000 tasks; want about %d", i, n, got, even)
			}
		}
	}
}

func TestShardableRefusesSplitDependency(t *testing.T) {
	// Find two ids that fall in different shards of 2, and two in the same.
	a, b, c := "", "", ""
	for i := 0; b == "" || c == ""; i++ {
		id := fmt.Sprintf("t%d", i)
		switch {
		case a == "":
			a = id
		case shardOf(id, 2) != shardOf(a, 2) && b == "":
			b = id
		case shardOf(id, 2) == shardOf(a, 2) && c == "":
			c = id
		}
	}
	q := idQueue(a, b, c)
	q[1].Ref = "agent/" + a // b starts from a's work: another shard
	err := checkShardable(q, 2)
	if err == nil || !strings.Contains(err.Error(), fmt.Sprintf("task %q", b)) || !strings.Contains(err.Error(), fmt.Sprintf("task %q", a)) {
		t.Errorf("checkShardable = %v; want a refusal naming %s and %s", err, b, a)
	}
	if err := checkShardable(q, 1); err != nil {
		t.Errorf("one shard: %v", err)
	}
	q[1].Ref = ""
	q[2].Ref = "refs/heads/agent/" + a // c starts from a's work: the same shard
	if err := checkShardable(q, 2); err != nil {
		t.Errorf("dependent tasks in one shard: %v", err)
	}
	q[2].Repo = "/other" // a ref of the same name in another repository
	q[1].Ref = "agent/" + a
	q[1].Repo = "/other"
	if err := checkShardable(q, 2); err != nil {
		t.Errorf("same branch name in another repository: %v", err)
	}
}

// validate --shard lists each shard's tasks; together they are the file's.
func TestValidateShard(t *testing.T) {
	seen := map[string]bool{}
	for i := range 3 {
		res := runMain(t, "--json", "validate", exampleYAML, "--shard", fmt.Sprintf("%d/3", i))
		if res.code != cli.ExitOK {
			t.Fatalf("validate --shard %d/3:\n%s", i, res)
		}
		var out struct {
			Files []struct {
				Shard *shardView `json:"shard"`
			} `json:"files"`
		}
		if err := json.Unmarshal([]byte(res.stdout), &out); err != nil || len(out.Files) != 1 || out.Files[0].Shard == nil {
			t.Fatalf("validate --json --shard %d/3: %v\n%s", i, err, res)
		}
		if got := out.Files[0].Shard.Shard; got != fmt.Sprintf("%d/3", i) {
			t.Errorf("shard %q, want %d/3", got, i)
		}
		for _, id := range out.Files[0].Shard.Tasks {
			if seen[id] {
				t.Errorf("task %s listed in two shards", id)
			}
			seen[id] = true
		}
	}
	if len(seen) != 3 {
		t.Errorf("the shards list %d tasks, want the 3 of %s", len(seen), exampleYAML)
	}
	res := runMain(t, "validate", exampleYAML, "--shard", "3/3")
	if res.code != cli.ExitUsage || !strings.Contains(res.stderr, `--shard "3/3"`) {
		t.Errorf("validate --shard 3/3:\n%s", res)
	}
}

// A shard with no task succeeds, says so, and records itself so that a
// merge finds it; its out directory then refuses the other shard.
func TestRunEmptyShard(t *testing.T) {
	t.Setenv("OPENAI_API_KEY", e2eKey)
	t.Setenv("RUNNER_MODEL", "gpt-4o-mini")
	repo, _ := sourceRepo(t, map[string]string{"a.txt": "a\n"})
	file := writeTaskFile(t, "tasks:\n  - {id: only, repo: "+repo+", prompt: \"Do it.\"}\n")
	empty := 1 - shardOf("only", 2)
	out := filepath.Join(t.TempDir(), "out")
	res := runMain(t, "run", file, "--out", out, "--shard", fmt.Sprintf("%d/2", empty))
	if res.code != cli.ExitOK || !strings.Contains(res.stdout+res.stderr, "nothing to run") {
		t.Fatalf("empty shard:\n%s", res)
	}
	rec, err := tasks.ReadShardRecord(out)
	if err != nil || rec == nil || rec.Index != empty || rec.Count != 2 || len(rec.Queue) != 1 {
		t.Errorf("shard record %+v, %v", rec, err)
	}
	res = runMain(t, "run", file, "--out", out, "--shard", fmt.Sprintf("%d/2", 1-empty))
	if res.code != cli.ExitUsage || !strings.Contains(res.stderr, fmt.Sprintf("holds shard %d/2, not %d/2", empty, 1-empty)) {
		t.Errorf("the other shard in the empty shard's out directory:\n%s", res)
	}
	res = runMain(t, "run", file, "--out", out)
	if res.code != cli.ExitUsage || !strings.Contains(res.stderr, "run with --shard") {
		t.Errorf("an unsharded run in a shard's out directory:\n%s", res)
	}
}
