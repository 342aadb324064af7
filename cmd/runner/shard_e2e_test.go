package main

import (
	"bytes"
	"errors"
	"fmt"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/runner-dev/runner/internal/cli"
	runreport "github.com/runner-dev/runner/internal/report"
	"github.com/runner-dev/runner/tasks"
)

// Three runner processes split a 7-task queue with --shard: together they
// run each task once; the shard given a tiny --run-budget ends its own
// tasks budget_exhausted and no other; runner merge gathers the three out
// directories, without touching them, into one that runner report and
// runner show read as one run.
func TestShardedRunAndMerge(t *testing.T) {
	repo, head := sourceRepo(t, map[string]string{"README.md": "hello\n"})
	file, scripts := batchOf(t, repo, 7, 1, 0)
	const n = 3
	q, err := tasks.Load(t.Context(), file)
	if err != nil {
		t.Fatal(err)
	}
	taken := make([][]string, n)
	for i := range n {
		for _, task := range (shard{i, n}).take(q.Tasks) {
			taken[i] = append(taken[i], task.ID)
		}
	}
	// The capped shard is the smallest that has tasks; its tasks never
	// reach the model (a call to it would find no script and fail).
	capped := -1
	for i := range n {
		if len(taken[i]) > 0 && (capped < 0 || len(taken[i]) < len(taken[capped])) {
			capped = i
		}
	}
	for _, id := range taken[capped] {
		delete(scripts, " "+id+".")
	}
	srv, script := modelServer(t, scripts)

	base := t.TempDir()
	outs := make([]string, n)
	cmds := make([]*exec.Cmd, n)
	stderrs := make([]*bytes.Buffer, n)
	for i := range n {
		outs[i] = filepath.Join(base, fmt.Sprintf("shard-%d", i))
		args := []string{"run", file, "--out", outs[i], "-j", "2", "--shard", fmt.Sprintf("%d/%d", i, n)}
		if i == capped {
			args = append(args, "--run-budget", "0.0000001")
		}
		if i == 1 {
			args[len(args)-1] = fmt.Sprintf("auto/%d", n) // the index from the environment, as in an Indexed Job
		}
		cmds[i] = runnerCmd(t, srv, args...)
		if i == 1 {
			cmds[i].Env = append(cmds[i].Env, "JOB_COMPLETION_INDEX=1")
		}
		stderrs[i] = &bytes.Buffer{}
		cmds[i].Stdout, cmds[i].Stderr = &bytes.Buffer{}, stderrs[i]
		if err := cmds[i].Start(); err != nil {
			t.Fatal(err)
		}
	}
	var pids []int
	started := time.Now()
	for i, cmd := range cmds {
		err := cmd.Wait()
		t.Logf("shard %d/%d (%d tasks) ended after %s", i, n, len(taken[i]), time.Since(started).Round(time.Second))
		pids = append(pids, cmd.Process.Pid)
		code := 0
		var exit *exec.ExitError
		if errors.As(err, &exit) {
			code = exit.ExitCode()
		} else if err != nil {
			t.Fatal(err)
		}
		want := cli.ExitOK
		if i == capped {
			want = cli.ExitFailure
		}
		if code != want {
			t.Errorf("shard %d/%d: exit code %d, want %d\nstderr:\n%s", i, n, code, want, stderrs[i])
		}
		if len(taken[i]) == 0 && !strings.Contains(stderrs[i].String()+fmt.Sprint(cmd.Stdout), "nothing to run") {
			t.Errorf("shard %d/%d takes no task and says nothing of it:\n%s", i, n, stderrs[i])
		}
	}
	noLeftovers(t, pids...)
	script.left(t)
	userRepoUnchanged(t, repo, head)

	// The union of the shards' results is the queue, each task once, in
	// the shard its id hashes to.
	union := map[string]tasks.Result{}
	for i := range n {
		rec, err := tasks.ReadShardRecord(outs[i])
		if err != nil || rec == nil || rec.Index != i || rec.Count != n {
			t.Fatalf("%s: shard record %+v, %v; want shard %d/%d", outs[i], rec, err, i, n)
		}
		for _, r := range readResultLines(t, outs[i]) {
			if _, dup := union[r.ID]; dup {
				t.Errorf("task %s ran in two shards", r.ID)
			}
			if !slices.Contains(taken[i], r.ID) {
				t.Errorf("task %s ran in shard %d, not its own", r.ID, i)
			}
			union[r.ID] = r
			want := tasks.StatusSucceeded
			if i == capped {
				want = tasks.StatusBudgetExhausted
			}
			if r.Status != want {
				t.Errorf("task %s of shard %d: status %s (%s), want %s", r.ID, i, r.Status, r.Error, want)
			}
		}
	}
	if len(union) != len(q.Tasks) {
		t.Errorf("the shards ran %d tasks, want the %d of the queue", len(union), len(q.Tasks))
	}
	// The git CLI reads the branches: those of the tasks that ran, each
	// at its result's commit.
	var wantBranches []string
	for _, task := range q.Tasks {
		r := union[task.ID]
		if r.Commit == "" {
			continue
		}
		wantBranches = append(wantBranches, r.Branch)
		if got := gitCLI(t, repo, "rev-parse", "refs/heads/"+r.Branch); got != r.Commit {
			t.Errorf("branch %s is at %s, its result says %s", r.Branch, got, r.Commit)
		}
		if got := gitCLI(t, repo, "show", r.Commit+":"+task.ID+"-1.txt"); got != task.ID+" step 1" {
			t.Errorf("%s:%s-1.txt = %q", r.Commit, task.ID, got)
		}
	}
	if len(wantBranches) != len(q.Tasks)-len(taken[capped]) {
		t.Errorf("%d tasks committed, want the %d outside the capped shard", len(wantBranches), len(q.Tasks)-len(taken[capped]))
	}
	branches := nonEmptyLines(gitCLI(t, repo, "for-each-ref", "--format=%(refname:short)", "refs/heads/agent/"))
	slices.Sort(wantBranches)
	if !slices.Equal(branches, wantBranches) {
		t.Errorf("branches %v, want %v", branches, wantBranches)
	}

	// A shard's out directory refuses another shard.
	res, _ := runRunner(t, srv, "run", file, "--out", outs[0], "--shard", "1/3")
	if res.code != cli.ExitUsage || !strings.Contains(res.stderr, "holds shard 0/3, not 1/3") {
		t.Errorf("shard 1/3 in shard 0/3's out directory:\n%s", res)
	}

	// Merge, without touching the shards; again, to the same bytes.
	before := make([]map[string]string, n)
	for i := range n {
		before[i] = snapshotOf(t, outs[i])
	}
	merged := filepath.Join(base, "merged")
	if res := runMain(t, "merge", "--out", merged, outs[2], outs[0], outs[1]); res.code != cli.ExitOK {
		t.Fatalf("merge:\n%s", res)
	}
	first := snapshotOf(t, merged)
	if res := runMain(t, "merge", "--out", merged, outs[0], outs[1], outs[2]); res.code != cli.ExitOK {
		t.Fatalf("merge again:\n%s", res)
	}
	if again := snapshotOf(t, merged); !mapsEqual(first, again) {
		t.Errorf("merging again changed the merged directory")
	}
	for i := range n {
		if !mapsEqual(before[i], snapshotOf(t, outs[i])) {
			t.Errorf("merge changed %s", outs[i])
		}
	}
	for id, r := range union {
		if _, ok := first["/trajectories/"+tasks.TrajectoryName(id, r.Attempt, 0)]; !ok && r.Status == tasks.StatusSucceeded {
			t.Errorf("the merge has no trajectory of %s", id)
		}
	}

	// The report of the merge counts what the shards did.
	if res := runMain(t, "report", merged); res.code != cli.ExitOK {
		t.Fatalf("report:\n%s", res)
	}
	run, err := runreport.Load(merged, nil)
	if err != nil {
		t.Fatal(err)
	}
	sum := run.Summarize()
	wantFailed := len(taken[capped])
	if sum.Tasks != len(q.Tasks) || sum.Succeeded != len(q.Tasks)-wantFailed || sum.Failed != wantFailed {
		t.Errorf("the merged report counts %d tasks, %d succeeded, %d failed; want %d, %d, %d",
			sum.Tasks, sum.Succeeded, sum.Failed, len(q.Tasks), len(q.Tasks)-wantFailed, wantFailed)
	}
	for _, task := range q.Tasks {
		if !fileExists(filepath.Join(merged, "report", runreport.PagePath(task.ID))) {
			t.Errorf("the merged report has no page of %s", task.ID)
		}
	}
	// show reads a task of any shard, diff and trajectory.
	for _, id := range taken[(capped+1)%n] {
		res := runMain(t, "show", merged, id)
		if res.code != cli.ExitOK || !strings.Contains(res.stdout, id+"-1.txt") {
			t.Errorf("show %s:\n%s", id, res)
		}
		res = runMain(t, "show", merged, id, "--trajectory")
		if res.code != cli.ExitOK || !strings.Contains(res.stdout, "write_file") {
			t.Errorf("show %s --trajectory:\n%s", id, res)
		}
	}
	// Nothing runs in the merged directory.
	res, _ = runRunner(t, srv, "run", file, "--out", merged)
	if res.code != cli.ExitUsage || !strings.Contains(res.stderr, "runner merge") {
		t.Errorf("run in the merged directory:\n%s", res)
	}
}

func mapsEqual(a, b map[string]string) bool {
	if len(a) != len(b) {
		return false
	}
	for k, v := range a {
		if w, ok := b[k]; !ok || w != v {
			return false
		}
	}
	return true
}
