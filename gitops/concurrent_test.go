package gitops

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"sync/atomic"
	"testing"

	"golang.org/x/sync/errgroup"
)

// TestCommitTreeConcurrentBranches runs eight tasks committing to eight
// branches of one repository at once; each branch must hold exactly its
// own task's work.
func TestCommitTreeConcurrentBranches(t *testing.T) {
	repo, base := newRepo(t, map[string]file{"shared.txt": {content: "shared\n"}, "src/a.go": {content: "package a\n"}})
	before := stateOf(t, repo)
	snaps := make([][]byte, 8)
	for i := range snaps {
		snaps[i] = tarOf(t,
			entry{name: "./shared.txt", body: "shared\n"},
			entry{name: "./src/a.go", body: fmt.Sprintf("package a // task %d\n", i)},
			entry{name: fmt.Sprintf("./task-%d.txt", i), body: fmt.Sprintf("task %d\n", i)},
			entry{name: "./common-new.txt", body: "same content in every task\n"},
		)
	}
	var g errgroup.Group
	results := make([]CommitResult, 8)
	for i := range 8 {
		g.Go(func() error {
			res, err := CommitTree(context.Background(), repo, base, bytes.NewReader(snaps[i]), CommitOptions{
				Branch:   fmt.Sprintf("runner/task-%d", i),
				Trailers: []Trailer{{"Runner-Task", fmt.Sprint(i)}},
			})
			results[i] = res
			return err
		})
	}
	if err := g.Wait(); err != nil {
		t.Fatal(err)
	}
	for i, res := range results {
		branch := fmt.Sprintf("runner/task-%d", i)
		if got := gitRun(t, repo, "rev-parse", branch); got != res.Hash.String() {
			t.Errorf("%s = %s, want %s", branch, got, res.Hash)
		}
		if got, want := gitRun(t, repo, "show", branch+":src/a.go"), fmt.Sprintf("package a // task %d", i); got != want {
			t.Errorf("%s:src/a.go = %q, want %q", branch, got, want)
		}
		if got, want := gitRun(t, repo, "ls-tree", "--name-only", branch), fmt.Sprintf("common-new.txt\nshared.txt\nsrc\ntask-%d.txt", i); got != want {
			t.Errorf("%s tree:\n%s\nwant:\n%s", branch, got, want)
		}
		if got := gitRun(t, repo, "log", "-1", "--format=%P", branch); got != base.String() {
			t.Errorf("%s parent = %s, want %s", branch, got, base)
		}
	}
	fsckStrict(t, repo)
	assertStateUnchanged(t, repo, before)
}

// TestCommitTreeConcurrentSameBranch races eight tasks for one branch
// name: exactly one wins and the branch holds its commit.
func TestCommitTreeConcurrentSameBranch(t *testing.T) {
	repo, base := newRepo(t, map[string]file{"a.txt": {content: "a\n"}})
	var wins atomic.Int32
	hashes := make([]string, 8)
	snaps := make([][]byte, 8)
	for i := range snaps {
		snaps[i] = tarOf(t, entry{name: "a.txt", body: fmt.Sprintf("writer %d\n", i)})
	}
	var g errgroup.Group
	for i := range 8 {
		g.Go(func() error {
			res, err := CommitTree(context.Background(), repo, base, bytes.NewReader(snaps[i]), CommitOptions{Branch: "runner/contended"})
			switch {
			case err == nil:
				wins.Add(1)
				hashes[i] = res.Hash.String()
				return nil
			case errors.Is(err, ErrBranchExists), errors.Is(err, ErrBranchLocked):
				return nil
			}
			return err
		})
	}
	if err := g.Wait(); err != nil {
		t.Fatal(err)
	}
	if wins.Load() != 1 {
		t.Fatalf("%d writers succeeded, want exactly 1", wins.Load())
	}
	got := gitRun(t, repo, "rev-parse", "runner/contended")
	found := false
	for _, h := range hashes {
		found = found || h == got
	}
	if !found {
		t.Errorf("branch = %s, which no successful writer returned (%q)", got, hashes)
	}
	fsckStrict(t, repo)
}

// TestSetBranchCreatesOnce skips CommitTree's early existence check and
// races setBranch itself: the lock and compare-and-swap let exactly one
// creation through.
func TestSetBranchCreatesOnce(t *testing.T) {
	repo, base := newRepo(t, map[string]file{"a.txt": {content: "a\n"}})
	var wins atomic.Int32
	var g errgroup.Group
	for range 16 {
		g.Go(func() error {
			r, err := openRepo(repo)
			if err != nil {
				return err
			}
			err = setBranch(r, "refs/heads/runner/once", base, false, zeroHash)
			switch {
			case err == nil:
				wins.Add(1)
			case errors.Is(err, ErrBranchExists), errors.Is(err, ErrBranchLocked):
			default:
				return err
			}
			return nil
		})
	}
	if err := g.Wait(); err != nil {
		t.Fatal(err)
	}
	if wins.Load() != 1 {
		t.Errorf("%d creations succeeded, want 1", wins.Load())
	}
	if got := gitRun(t, repo, "rev-parse", "runner/once"); got != base.String() {
		t.Errorf("branch = %s, want %s", got, base)
	}
}
