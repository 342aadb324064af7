package gitops

import (
	"bytes"
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/go-git/go-git/v5/plumbing"
)

// history makes a repository with four commits on main and returns it with
// the commits, oldest first.
func history(t *testing.T) (string, []plumbing.Hash) {
	t.Helper()
	dir, first := newRepo(t, map[string]file{"f.txt": {content: "0\n"}})
	commits := []plumbing.Hash{first}
	for _, v := range []string{"1", "2", "3"} {
		writeFiles(t, dir, map[string]file{"f.txt": {content: v + "\n"}})
		gitRun(t, dir, "commit", "-q", "-am", "commit "+v)
		commits = append(commits, mustHash(gitRun(t, dir, "rev-parse", "HEAD")))
	}
	return dir, commits
}

// worktreeState is what must not change in a worktree the user works in.
func worktreeState(t *testing.T, dir string) string {
	t.Helper()
	head, _ := gitTry(dir, "rev-parse", "HEAD")
	status := gitRun(t, dir, "status", "--porcelain=v1", "--untracked-files=all")
	return head + "\n" + status
}

// A branch checked out in any worktree of the repository — the main one, a
// linked one, one in the middle of a rebase or a bisect — is never written,
// with or without Force, as git refuses `git branch -f` on it.
func TestCommitTreeNeverWritesACheckedOutBranch(t *testing.T) {
	repo, commits := history(t)
	base := t.TempDir()
	linked := filepath.Join(base, "linked")
	gitRun(t, repo, "worktree", "add", "-q", "-b", "side", linked, commits[1].String())
	rebasing := filepath.Join(base, "rebasing")
	gitRun(t, repo, "worktree", "add", "-q", "-b", "rebasing", rebasing, commits[1].String())
	writeFiles(t, rebasing, map[string]file{"f.txt": {content: "conflict\n"}})
	gitRun(t, rebasing, "commit", "-q", "-am", "conflicting")
	if _, err := gitTry(rebasing, "rebase", "main"); err == nil {
		t.Fatal("the rebase did not stop on its conflict")
	}
	bisecting := filepath.Join(base, "bisecting")
	gitRun(t, repo, "worktree", "add", "-q", "-b", "bisecting", bisecting, "main")
	gitRun(t, bisecting, "bisect", "start", "HEAD", commits[0].String())
	unborn := filepath.Join(base, "unborn")
	gitRun(t, repo, "worktree", "add", "-q", "--detach", unborn)
	gitRun(t, unborn, "checkout", "-q", "--orphan", "unborn")

	worktrees := []string{repo, linked, rebasing, bisecting, unborn}
	before := map[string]string{}
	for _, wt := range worktrees {
		before[wt] = worktreeState(t, wt)
	}
	refsBefore := gitRun(t, repo, "for-each-ref")
	snapshot := tarDir(t, repo)
	for _, branch := range []string{"main", "side", "rebasing", "bisecting", "unborn"} {
		// git is the reference: it refuses these too (unborn aside,
		// which git would create, making the orphan checkout a commit).
		if branch != "unborn" {
			if _, err := gitTry(repo, "branch", "-f", branch, commits[0].String()); err == nil {
				t.Fatalf("git branch -f %s succeeded: not a checked-out branch", branch)
			}
		}
		for _, force := range []bool{false, true} {
			_, err := CommitTree(context.Background(), repo, commits[0], bytes.NewReader(snapshot), CommitOptions{Branch: branch, Force: force})
			if !force && errors.Is(err, ErrBranchExists) {
				continue // refused before the snapshot is read, as any existing branch
			}
			var co *CheckedOutError
			if !errors.As(err, &co) || !errors.Is(err, ErrBranchCheckedOut) {
				t.Errorf("CommitTree to %s (force %v) = %v, want a *CheckedOutError", branch, force, err)
				continue
			}
			if !strings.Contains(err.Error(), "branch "+branch+" is checked out in ") {
				t.Errorf("error %q does not name the worktree", err)
			}
		}
	}
	// The same seen from a linked worktree, whose HEAD and commondir lead
	// to the others.
	for _, branch := range []string{"main", "side"} {
		_, err := CommitTree(context.Background(), rebasing, commits[0], bytes.NewReader(snapshot), CommitOptions{Branch: branch, Force: true})
		if !errors.Is(err, ErrBranchCheckedOut) {
			t.Errorf("CommitTree through a linked worktree to %s = %v, want ErrBranchCheckedOut", branch, err)
		}
	}
	if got := gitRun(t, repo, "for-each-ref"); got != refsBefore {
		t.Errorf("refs changed:\n got %s\nwant %s", got, refsBefore)
	}
	for _, wt := range worktrees {
		if got := worktreeState(t, wt); got != before[wt] {
			t.Errorf("%s changed:\n got %s\nwant %s", wt, got, before[wt])
		}
	}
	if _, err := os.Stat(filepath.Join(repo, ".git", "refs", "heads", "main.lock")); err == nil {
		t.Error("main.lock left behind")
	}
}

// The check is made again when the commit is written: a branch the user
// checks out while the task runs is refused then.
func TestCommitTreeRefusesABranchCheckedOutMeanwhile(t *testing.T) {
	repo, commits := history(t)
	snapshot := tarDir(t, repo)
	if _, err := CommitTree(context.Background(), repo, commits[0], bytes.NewReader(snapshot), CommitOptions{Branch: "agent/x"}); err != nil {
		t.Fatal(err)
	}
	in, err := Inspect(repo)
	if err != nil {
		t.Fatal(err)
	}
	if err := in.CheckBranch("agent/x"); err != nil {
		t.Fatalf("before the checkout: %v", err)
	}
	wt := filepath.Join(t.TempDir(), "review")
	gitRun(t, repo, "worktree", "add", "-q", wt, "agent/x")
	before := worktreeState(t, wt)
	_, err = CommitTree(context.Background(), repo, commits[1], bytes.NewReader(snapshot), CommitOptions{Branch: "agent/x", Force: true})
	if !errors.Is(err, ErrBranchCheckedOut) || !strings.Contains(err.Error(), wt) {
		t.Fatalf("CommitTree after the checkout = %v, want ErrBranchCheckedOut naming %s", err, wt)
	}
	if got := worktreeState(t, wt); got != before {
		t.Errorf("the review worktree changed:\n got %s\nwant %s", got, before)
	}
	if err := Rollback(context.Background(), repo, "agent/x", nil); !errors.Is(err, ErrBranchCheckedOut) {
		t.Errorf("Rollback of a branch checked out in a linked worktree = %v, want ErrBranchCheckedOut", err)
	}
}

// The HEAD of a bare repository is never written either, although git
// would let `git branch -f` move it.
func TestCommitTreeRefusesBareHEAD(t *testing.T) {
	src, commits := history(t)
	bare := filepath.Join(t.TempDir(), "bare.git")
	gitRun(t, filepath.Dir(bare), "clone", "-q", "--bare", src, bare)
	_, err := CommitTree(context.Background(), bare, commits[0], bytes.NewReader(tarDir(t, src)), CommitOptions{Branch: "main", Force: true})
	if !errors.Is(err, ErrBranchCheckedOut) || !strings.Contains(err.Error(), "HEAD of the bare repository") {
		t.Fatalf("CommitTree to a bare repository's HEAD = %v, want ErrBranchCheckedOut", err)
	}
	if got := gitRun(t, bare, "rev-parse", "main"); got != commits[3].String() {
		t.Errorf("main moved to %s", got)
	}
}

// A branch that git cannot hold beside the existing refs — loose or packed,
// above or below it — is refused with the ref in the way named, as git
// refuses `git branch` for it, and nothing is left behind.
func TestCommitTreeRefConflicts(t *testing.T) {
	repo, commits := history(t)
	gitRun(t, repo, "branch", "packed/x")
	gitRun(t, repo, "branch", "flat")
	gitRun(t, repo, "pack-refs", "--all")
	gitRun(t, repo, "branch", "loose/a/b")
	gitRun(t, repo, "branch", "agent")
	snapshot := tarDir(t, repo)
	in, err := Inspect(repo)
	if err != nil {
		t.Fatal(err)
	}
	for branch, existing := range map[string]string{
		"agent/a":      "refs/heads/agent",
		"flat/x/y":     "refs/heads/flat",
		"packed":       "refs/heads/packed/x",
		"loose":        "refs/heads/loose/a/b",
		"loose/a":      "refs/heads/loose/a/b",
		"loose/a/b/c":  "refs/heads/loose/a/b",
		"packed/x/y/z": "refs/heads/packed/x",
	} {
		if _, err := gitTry(repo, "branch", branch); err == nil {
			t.Fatalf("git branch %s succeeded", branch)
		}
		refs := gitRun(t, repo, "for-each-ref")
		_, err := CommitTree(context.Background(), repo, commits[0], bytes.NewReader(snapshot), CommitOptions{Branch: branch, Force: true})
		var rc *RefConflictError
		if !errors.As(err, &rc) || rc.Existing != existing {
			t.Errorf("CommitTree to %s = %v, want a conflict with %s", branch, err, existing)
		}
		if err := in.CheckBranch(branch); !errors.As(err, &rc) || rc.Existing != existing {
			t.Errorf("CheckBranch(%s) = %v, want a conflict with %s", branch, err, existing)
		}
		if got := gitRun(t, repo, "for-each-ref"); got != refs {
			t.Errorf("refs changed by %s:\n got %s\nwant %s", branch, got, refs)
		}
	}
	if out := gitRun(t, repo, "status", "--porcelain"); out != "" {
		t.Errorf("git status: %s", out)
	}
	fsckStrict(t, repo)
	// Existing branches themselves, and their neighbours, are no conflict.
	for _, branch := range []string{"agent", "packed/y", "loose/a/c", "flatter"} {
		if err := in.CheckBranch(branch); err != nil {
			t.Errorf("CheckBranch(%s) = %v", branch, err)
		}
	}
}

// A repository with no commits is named as such, before a run (Inspect)
// and when cloning, locally or over the protocol.
func TestNoCommits(t *testing.T) {
	root := t.TempDir()
	empty := filepath.Join(root, "empty.git")
	gitRun(t, root, "init", "-q", "--bare", empty)
	if _, err := gitTry(empty, "rev-parse", "--verify", "HEAD"); err == nil {
		t.Fatal("git finds a commit in the empty repository")
	}
	if _, err := Inspect(empty); !errors.Is(err, ErrNoCommits) || !strings.Contains(err.Error(), "repository has no commits") {
		t.Errorf("Inspect = %v, want ErrNoCommits", err)
	}
	worktree := filepath.Join(root, "wt")
	gitRun(t, root, "init", "-q", worktree)
	if _, err := Inspect(worktree); !errors.Is(err, ErrNoCommits) {
		t.Errorf("Inspect of an empty worktree = %v, want ErrNoCommits", err)
	}
	dir := t.TempDir()
	if _, err := Clone(context.Background(), CloneOptions{URL: empty, Dir: dir, Depth: 1}); !errors.Is(err, ErrNoCommits) ||
		!strings.Contains(err.Error(), "repository has no commits") {
		t.Errorf("Clone of a local empty repository = %v, want ErrNoCommits", err)
	}
	assertEmptyDir(t, dir)
	const token = "tok-empty-repo"
	srv := newGitHTTP(t, root, token)
	_, err := Clone(context.Background(), CloneOptions{URL: srv.URL + "/empty.git", Dir: dir, Auth: Credentials{Token: token}})
	if !errors.Is(err, ErrNoCommits) || !strings.Contains(err.Error(), "repository has no commits") {
		t.Errorf("Clone of a remote empty repository = %v, want ErrNoCommits", err)
	}
	assertEmptyDir(t, dir)
}

// A ref that names both a branch and a tag is taken as the branch, as
// `git clone --branch` takes it, and the tag is reported; a full ref name
// picks either.
func TestInspectAmbiguousRef(t *testing.T) {
	repo, commits := history(t)
	gitRun(t, repo, "branch", "v1", commits[1].String())
	gitRun(t, repo, "tag", "v1", commits[2].String())
	in, err := Inspect(repo)
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		ref        string
		name, also plumbing.ReferenceName
		commit     plumbing.Hash
	}{
		{"v1", "refs/heads/v1", "refs/tags/v1", commits[1]},
		{"refs/tags/v1", "refs/tags/v1", "", commits[2]},
		{"refs/heads/v1", "refs/heads/v1", "", commits[1]},
		{"main", "refs/heads/main", "", commits[3]},
		{"", "refs/heads/main", "", commits[3]},
		{commits[0].String()[:10], "", "", commits[0]},
	}
	for _, tt := range tests {
		got, err := in.Ref(tt.ref)
		if err != nil || got.Name != tt.name || got.Also != tt.also {
			t.Errorf("Ref(%q) = %+v, %v; want %s also %q", tt.ref, got, err, tt.name, tt.also)
		}
		dir := t.TempDir()
		ws, err := Clone(context.Background(), CloneOptions{URL: repo, Ref: tt.ref, Dir: dir, Depth: 1})
		if err != nil || ws.Base != tt.commit {
			t.Errorf("Clone at %q = %v, %v; want %s", tt.ref, ws, err, tt.commit)
		}
	}
	// git clone --branch is the reference for the branch-first rule.
	dir := filepath.Join(t.TempDir(), "c")
	gitRun(t, repo, "clone", "-q", "--branch", "v1", repo, dir)
	if got := gitRun(t, dir, "rev-parse", "HEAD"); got != commits[1].String() {
		t.Errorf("git clone --branch v1 checked out %s, want the branch's %s", got, commits[1])
	}
	for _, ref := range []string{"nope", strings.Repeat("ab", 20)} {
		if _, err := in.Ref(ref); !errors.Is(err, ErrRefNotFound) {
			t.Errorf("Ref(%q) = %v, want ErrRefNotFound", ref, err)
		}
	}
	gitRun(t, repo, "symbolic-ref", "HEAD", "refs/heads/gone")
	in, _ = Inspect(repo)
	if _, err := in.Ref(""); !errors.Is(err, ErrRefNotFound) || !strings.Contains(err.Error(), "HEAD points to gone") {
		t.Errorf(`Ref("") with HEAD on a missing branch = %v`, err)
	}
}
