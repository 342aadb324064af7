package main

import (
	"archive/tar"
	"bytes"
	"encoding/json"
	"math/rand/v2"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/go-git/go-git/v5/plumbing"

	"github.com/runner-dev/runner/gitops"
	"github.com/runner-dev/runner/internal/cli"
	"github.com/runner-dev/runner/tasks"
)

// gitCLI runs the git CLI, the independent reader of repositories, in dir and
// returns its trimmed stdout.
func gitCLI(t *testing.T, dir string, args ...string) string {
	t.Helper()
	cmd := exec.Command("git", append([]string{"-c", "init.defaultBranch=main"}, args...)...)
	cmd.Dir = dir
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		t.Fatalf("git %s: %v\n%s", strings.Join(args, " "), err, stderr.String())
	}
	return strings.TrimSpace(stdout.String())
}

// fixtureRepo makes a repository with one commit on main and the given
// branches at that commit; its worktree has an uncommitted change and an
// untracked file, which rollback must leave alone. It returns the path and
// the commit.
func fixtureRepo(t *testing.T, branches ...string) (string, string) {
	t.Helper()
	dir := filepath.Join(t.TempDir(), "repo")
	gitCLI(t, filepath.Dir(dir), "init", "-q", dir)
	writeFile(t, filepath.Join(dir, "README.md"), "hello\n")
	gitCLI(t, dir, "add", "README.md")
	gitCLI(t, dir, "commit", "-q", "-m", "first")
	for _, b := range branches {
		gitCLI(t, dir, "branch", b)
	}
	writeFile(t, filepath.Join(dir, "README.md"), "hello, edited\n")
	writeFile(t, filepath.Join(dir, "notes.txt"), "untracked\n")
	return dir, gitCLI(t, dir, "rev-parse", "HEAD")
}

// repoState is what a rollback must not change.
type repoState struct{ head, headRef, status, diff string }

func stateOf(t *testing.T, dir string) repoState {
	t.Helper()
	return repoState{
		head:    gitCLI(t, dir, "rev-parse", "HEAD"),
		headRef: gitCLI(t, dir, "symbolic-ref", "HEAD"),
		status:  gitCLI(t, dir, "status", "--porcelain"),
		diff:    gitCLI(t, dir, "diff"),
	}
}

// branchList lists the branches of the repository (or bare repository) dir.
func branchList(t *testing.T, dir string) []string {
	t.Helper()
	out := gitCLI(t, dir, "branch", "--list", "--format=%(refname:short)")
	return strings.Fields(out)
}

// recordResults writes results into the out directory dir as a run does.
func recordResults(t *testing.T, dir string, results ...tasks.Result) {
	t.Helper()
	store, err := tasks.OpenStore(dir)
	if err != nil {
		t.Fatal(err)
	}
	defer store.Close()
	for _, r := range results {
		if err := store.Record(r); err != nil {
			t.Fatal(err)
		}
	}
}

func TestRollbackFromResults(t *testing.T) {
	repo, commit := fixtureRepo(t, "agent/one", "agent/two", "agent/three", "mine")
	before := stateOf(t, repo)
	out := filepath.Join(t.TempDir(), "out")
	recordResults(t, out,
		tasks.Result{ID: "one", Status: tasks.StatusSucceeded, Repo: repo, Branch: "agent/one", Commit: commit},
		tasks.Result{ID: "two", Status: tasks.StatusCheckFailed, Repo: repo, Branch: "agent/two", Commit: commit},
		// Nothing committed: the branch of that name is not the run's.
		tasks.Result{ID: "three", Status: tasks.StatusModelError, Repo: repo, Branch: "agent/three"},
	)

	res := runMain(t, "rollback", "--out", out, "--dry-run", "--all")
	if res.code != cli.ExitOK {
		t.Fatalf("dry run: %s", res)
	}
	checkLines(t, "dry-run stdout", res.stdout, []string{
		"would delete branch agent/one of " + repo + " (task one)",
		"would delete branch agent/two of " + repo + " (task two)",
	})
	if got, want := strings.Join(branchList(t, repo), " "), "agent/one agent/three agent/two main mine"; got != want {
		t.Fatalf("after the dry run, branches %q, want %q", got, want)
	}

	res = runMain(t, "rollback", "--out", out, "one")
	if res.code != cli.ExitOK {
		t.Fatalf("rollback one: %s", res)
	}
	checkLines(t, "stdout", res.stdout, []string{"deleted branch agent/one of " + repo + " (task one)"})
	if got, want := strings.Join(branchList(t, repo), " "), "agent/three agent/two main mine"; got != want {
		t.Errorf("after rollback of one, branches %q, want %q", got, want)
	}

	res = runMain(t, "rollback", "--out", out, "--all")
	if res.code != cli.ExitOK {
		t.Fatalf("rollback --all: %s", res)
	}
	checkLines(t, "stdout", res.stdout, []string{
		"deleted branch agent/one of " + repo, // already gone: still done
		"deleted branch agent/two of " + repo,
	})
	if got, want := strings.Join(branchList(t, repo), " "), "agent/three main mine"; got != want {
		t.Errorf("after rollback --all, branches %q, want %q", got, want)
	}
	if after := stateOf(t, repo); after != before {
		t.Errorf("rollback changed the repository:\nbefore %+v\nafter  %+v", before, after)
	}
	gitCLI(t, repo, "fsck", "--strict", "--no-progress")
}

func TestRollbackPushedToRemote(t *testing.T) {
	repo, commit := fixtureRepo(t, "agent/pushed", "agent/local")
	remote := filepath.Join(t.TempDir(), "remote.git")
	gitCLI(t, repo, "init", "-q", "--bare", remote)
	gitCLI(t, repo, "push", "-q", remote, "agent/pushed", "main")
	out := filepath.Join(t.TempDir(), "out")
	url := "file://" + remote
	recordResults(t, out,
		tasks.Result{ID: "pushed", Status: tasks.StatusSucceeded, Repo: url, Branch: "agent/pushed", Commit: commit, Pushed: true},
		tasks.Result{ID: "unpushed", Status: tasks.StatusCheckFailed, Repo: url, Branch: "agent/unpushed", Commit: commit},
	)
	res := runMain(t, "--json", "rollback", "--out", out, "--all")
	if res.code != cli.ExitOK {
		t.Fatalf("rollback: %s", res)
	}
	var got struct {
		DryRun   bool              `json:"dry_run"`
		Branches []rollbackOutcome `json:"branches"`
	}
	if err := json.Unmarshal([]byte(res.stdout), &got); err != nil {
		t.Fatalf("stdout is not JSON: %v\n%s", err, res.stdout)
	}
	if len(got.Branches) != 2 {
		t.Fatalf("%d branches reported, want 2:\n%s", len(got.Branches), res.stdout)
	}
	if b := got.Branches[0]; b.Action != actionDeleted || b.Remote != url || b.Branch != "agent/pushed" {
		t.Errorf("pushed branch: %+v, want deleted from %s", b, url)
	}
	if b := got.Branches[1]; b.Action != actionSkipped || b.Branch != "agent/unpushed" {
		t.Errorf("unpushed branch: %+v, want skipped", b)
	}
	if got, want := strings.Join(branchList(t, remote), " "), "main"; got != want {
		t.Errorf("remote branches after rollback %q, want %q", got, want)
	}
	// The local repository was not the run's: its branch stays.
	if got, want := strings.Join(branchList(t, repo), " "), "agent/local agent/pushed main"; got != want {
		t.Errorf("local branches %q, want %q", got, want)
	}
}

func TestRollbackDirect(t *testing.T) {
	repo, _ := fixtureRepo(t, "agent/direct")
	remote := filepath.Join(t.TempDir(), "remote.git")
	gitCLI(t, repo, "init", "-q", "--bare", remote)
	gitCLI(t, repo, "push", "-q", remote, "agent/direct", "main")
	before := stateOf(t, repo)

	res := runMain(t, "rollback", "--repo", repo, "--branch", "agent/direct", "--remote", remote)
	if res.code != cli.ExitOK {
		t.Fatalf("rollback: %s", res)
	}
	checkLines(t, "stdout", res.stdout, []string{"deleted branch agent/direct of " + repo + " and of " + remote})
	if got := strings.Join(branchList(t, repo), " "); got != "main" {
		t.Errorf("local branches %q, want main", got)
	}
	if got := strings.Join(branchList(t, remote), " "); got != "main" {
		t.Errorf("remote branches %q, want main", got)
	}
	if after := stateOf(t, repo); after != before {
		t.Errorf("rollback changed the repository:\nbefore %+v\nafter  %+v", before, after)
	}

	// The checked-out branch is refused, with a hint.
	res = runMain(t, "rollback", "--repo", repo, "--branch", "main")
	if res.code != cli.ExitFailure {
		t.Fatalf("rollback of the checked-out branch: %s", res)
	}
	checkLines(t, "stderr", res.stderr, []string{
		"could not delete branch main of " + repo + ": rollback main: branch main is checked out in " + repo + ";",
		"hint: check out another branch",
		"runner: rollback: 1 of 1 branch not deleted",
	})
	if got := strings.Join(branchList(t, repo), " "); got != "main" {
		t.Errorf("branches %q, want main", got)
	}
}

func TestRollbackRefusals(t *testing.T) {
	repo, commit := fixtureRepo(t, "agent/one")
	out := filepath.Join(t.TempDir(), "out")
	recordResults(t, out, tasks.Result{ID: "one", Status: tasks.StatusSucceeded, Repo: repo, Branch: "agent/one", Commit: commit})
	empty := t.TempDir()

	t.Run("unknown task", func(t *testing.T) {
		res := runMain(t, "rollback", "--out", out, "one", "nine")
		if res.code != cli.ExitUsage || !strings.HasPrefix(res.stderr, `runner: no result recorded for task ["nine"]`) {
			t.Errorf("%s\nwant exit code 2 naming task nine", res)
		}
	})
	t.Run("not an out directory", func(t *testing.T) {
		res := runMain(t, "rollback", "--out", empty, "--all")
		if res.code != cli.ExitUsage || !strings.Contains(res.stderr, "has no results.jsonl") {
			t.Errorf("%s\nwant exit code 2: no results.jsonl", res)
		}
		if got := filepath.Join(empty, tasks.ResultsFile); fileExists(got) {
			t.Errorf("rollback created %s", got)
		}
	})
	t.Run("out directory of a live run", func(t *testing.T) {
		store, err := tasks.OpenStore(out)
		if err != nil {
			t.Fatal(err)
		}
		defer store.Close()
		res := runMain(t, "rollback", "--out", out, "--all")
		if res.code != cli.ExitFailure || !strings.Contains(res.stderr, "in use by another run") ||
			!strings.Contains(res.stderr, "hint: wait for the other run to finish") {
			t.Errorf("%s\nwant exit code 1: the out directory is locked", res)
		}
	})
	if got := strings.Join(branchList(t, repo), " "); got != "agent/one main" {
		t.Errorf("after refusals, branches %q, want agent/one main", got)
	}
}

func TestPlanRollback(t *testing.T) {
	results := []tasks.Result{
		{ID: "a", Attempt: 1, Repo: "/r", Branch: "agent/a", Commit: "c1"},
		{ID: "a", Attempt: 2, Repo: "/r", Branch: "agent/a", Commit: "c2", Pushed: true},
		{ID: "b", Attempt: 1, Repo: "/r", Branch: "agent/b"},                 // nothing committed
		{ID: "c", Attempt: 1, Repo: "/r", Branch: "shared", Commit: "c3"},    // two tasks, one branch
		{ID: "d", Attempt: 1, Repo: "/r", Branch: "shared", Commit: "c4"},    //
		{ID: "e", Attempt: 1, Repo: "/other", Branch: "shared", Commit: "c"}, // same name, other repo
	}
	tests := []struct {
		name string
		ids  []string
		want []string // repo:branch:tasks:pushed
	}{
		{"all", nil, []string{"/r:agent/a:a:true", "/r:shared:c,d:false", "/other:shared:e:false"}},
		{"some", []string{"d", "b"}, []string{"/r:shared:d:false"}},
		{"nothing committed", []string{"b"}, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			plan, err := planRollback(results, tt.ids)
			if err != nil {
				t.Fatal(err)
			}
			var got []string
			for _, p := range plan {
				got = append(got, strings.Join([]string{p.Repo, p.Branch, strings.Join(p.Tasks, ","), map[bool]string{true: "true", false: "false"}[p.Pushed]}, ":"))
			}
			if strings.Join(got, " ") != strings.Join(tt.want, " ") {
				t.Errorf("plan %q, want %q", got, tt.want)
			}
		})
	}
	if _, err := planRollback(results, []string{"a", "zz"}); cli.Code(err) != cli.ExitUsage {
		t.Errorf("unknown id: %v, want a usage error", err)
	}
}

// A branch someone committed on after the run is not the run's any more:
// rollback leaves it, and says why.
func TestRollbackKeepsMovedBranch(t *testing.T) {
	repo, commit := fixtureRepo(t, "agent/moved")
	tree := gitCLI(t, repo, "rev-parse", commit+"^{tree}")
	later := gitCLI(t, repo, "-c", "user.name=u", "-c", "user.email=u@u", "commit-tree", tree, "-p", commit, "-m", "my own work")
	gitCLI(t, repo, "update-ref", "refs/heads/agent/moved", later)
	out := filepath.Join(t.TempDir(), "out")
	recordResults(t, out, tasks.Result{ID: "moved", Status: tasks.StatusSucceeded, Repo: repo, Branch: "agent/moved", Commit: commit})
	res := runMain(t, "rollback", "--out", out, "--all")
	if res.code != cli.ExitOK || !strings.Contains(res.stdout, "moved since the run") {
		t.Fatalf("rollback: %s", res)
	}
	if got := gitCLI(t, repo, "rev-parse", "agent/moved"); got != later {
		t.Errorf("agent/moved = %s, want it kept at %s", got, later)
	}
}

// agentCommit commits, as a run does, the files of base (README.md) plus
// a new file of size random bytes on branch, and returns the commit.
func agentCommit(t *testing.T, repo, base, branch, name string, size int, seed uint64) string {
	t.Helper()
	var buf bytes.Buffer
	tw := tar.NewWriter(&buf)
	body := make([]byte, size)
	r := rand.New(rand.NewPCG(seed, seed))
	for i := range body {
		body[i] = byte(r.Uint32())
	}
	for _, f := range []struct {
		name string
		body []byte
	}{{"README.md", []byte("hello\n")}, {name, body}} {
		if err := tw.WriteHeader(&tar.Header{Name: f.name, Mode: 0o644, Size: int64(len(f.body)), Typeflag: tar.TypeReg}); err != nil {
			t.Fatal(err)
		}
		tw.Write(f.body)
	}
	if err := tw.Close(); err != nil {
		t.Fatal(err)
	}
	res, err := gitops.CommitTree(t.Context(), repo, plumbing.NewHash(base), &buf, gitops.CommitOptions{Branch: branch})
	if err != nil {
		t.Fatal(err)
	}
	return res.Hash.String()
}

// runner rollback --all gives back the space the run's commits took in the
// user's repository, except what the user merged: git count-objects -v
// shows the objects of the merged branch only, and fsck --strict --full
// finds the repository whole. Regression test: the commits' objects stayed
// after the rollback.
func TestRollbackAllGivesBackTheSpace(t *testing.T) {
	repo, base := fixtureRepo(t)
	before := gitCLI(t, repo, "count-objects", "-v")
	out := filepath.Join(t.TempDir(), "out")
	var results []tasks.Result
	for i, id := range []string{"one", "two", "three"} {
		commit := agentCommit(t, repo, base, "agent/"+id, id+".bin", 256<<10, uint64(i))
		results = append(results, tasks.Result{ID: id, Status: tasks.StatusSucceeded, Repo: repo, Branch: "agent/" + id, Commit: commit})
	}
	recordResults(t, out, results...)
	res := runMain(t, "rollback", "--out", out, "--all")
	if res.code != cli.ExitOK {
		t.Fatalf("rollback --all: %s", res)
	}
	if got := gitCLI(t, repo, "count-objects", "-v"); got != before {
		t.Errorf("git count-objects -v after rollback --all:\n%s\nbefore the run:\n%s", got, before)
	}
	gitCLI(t, repo, "fsck", "--strict", "--full", "--no-progress")

	// A branch the user merged keeps its objects.
	commit := agentCommit(t, repo, base, "agent/kept", "kept.bin", 256<<10, 9)
	gitCLI(t, repo, "stash", "-q", "-u")
	gitCLI(t, repo, "-c", "user.name=U", "-c", "user.email=u@example.com", "merge", "-q", "--no-ff", "-m", "merge", "agent/kept")
	recordResults(t, out, tasks.Result{ID: "kept", Status: tasks.StatusSucceeded, Repo: repo, Branch: "agent/kept", Commit: commit})
	merged := gitCLI(t, repo, "count-objects", "-v")
	res = runMain(t, "rollback", "--out", out, "kept")
	if res.code != cli.ExitOK {
		t.Fatalf("rollback kept: %s", res)
	}
	if got := gitCLI(t, repo, "count-objects", "-v"); got != merged {
		t.Errorf("git count-objects -v changed by rolling back a merged branch:\n%s\nbefore:\n%s", got, merged)
	}
	gitCLI(t, repo, "fsck", "--strict", "--full", "--no-progress")
	gitCLI(t, repo, "cat-file", "-e", "HEAD:kept.bin")
}
