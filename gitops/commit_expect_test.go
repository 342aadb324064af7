package gitops

import (
	"bytes"
	"context"
	"errors"
	"testing"
)

// A commit that continues a branch moves it forward from where it was
// expected, and refuses when someone else moved or deleted it.
func TestCommitTreeExpectMovesBranchForward(t *testing.T) {
	repo, base := newRepo(t, map[string]file{"a.txt": {content: "a\n"}})
	ctx := context.Background()
	first, err := CommitTree(ctx, repo, base, bytes.NewReader(tarOf(t, entry{name: "a.txt", body: "1\n"})), CommitOptions{Branch: "agent/x"})
	if err != nil {
		t.Fatal(err)
	}
	second, err := CommitTree(ctx, repo, first.Hash, bytes.NewReader(tarOf(t, entry{name: "a.txt", body: "2\n"})),
		CommitOptions{Branch: "agent/x", Expect: first.Hash})
	if err != nil {
		t.Fatalf("CommitTree with Expect at the branch head: %v", err)
	}
	if got := gitRun(t, repo, "rev-parse", "agent/x"); got != second.Hash.String() {
		t.Errorf("agent/x = %s, want %s", got, second.Hash)
	}
	if got := gitRun(t, repo, "rev-parse", "agent/x^"); got != first.Hash.String() {
		t.Errorf("agent/x^ = %s, want the first commit %s", got, first.Hash)
	}
	gitRun(t, repo, "merge-base", "--is-ancestor", first.Hash.String(), "agent/x")
	fsckStrict(t, repo)

	// The user commits on the branch: the expected head is gone.
	gitRun(t, repo, "update-ref", "refs/heads/agent/x", base.String())
	_, err = CommitTree(ctx, repo, second.Hash, bytes.NewReader(tarOf(t, entry{name: "a.txt", body: "3\n"})),
		CommitOptions{Branch: "agent/x", Expect: second.Hash, Force: true})
	if !errors.Is(err, ErrBranchChanged) {
		t.Errorf("CommitTree on a moved branch: err = %v, want ErrBranchChanged", err)
	}
	if got := gitRun(t, repo, "rev-parse", "agent/x"); got != base.String() {
		t.Errorf("agent/x = %s after a refused commit, want it left at %s", got, base)
	}

	gitRun(t, repo, "branch", "-D", "agent/x")
	_, err = CommitTree(ctx, repo, second.Hash, bytes.NewReader(tarOf(t, entry{name: "a.txt", body: "3\n"})),
		CommitOptions{Branch: "agent/x", Expect: second.Hash})
	if !errors.Is(err, ErrBranchChanged) {
		t.Errorf("CommitTree on a deleted branch: err = %v, want ErrBranchChanged", err)
	}
	if branchExists(repo, "agent/x") {
		t.Error("a deleted branch was made again")
	}
}

// The check made under the ref's lock catches a move made after
// CommitTree's first look.
func TestSetBranchExpectUnderLock(t *testing.T) {
	repo, base := newRepo(t, map[string]file{"a.txt": {content: "a\n"}})
	gitRun(t, repo, "branch", "agent/y")
	r, err := openRepo(repo)
	if err != nil {
		t.Fatal(err)
	}
	other := mustHash(gitRun(t, repo, "commit-tree", "-p", base.String(), "-m", "user", base.String()+"^{tree}"))
	gitRun(t, repo, "update-ref", "refs/heads/agent/y", other.String())
	if err := setBranch(r, "refs/heads/agent/y", base, false, base); !errors.Is(err, ErrBranchChanged) {
		t.Errorf("setBranch expecting %s on a branch at %s: err = %v, want ErrBranchChanged", base, other, err)
	}
	if got := gitRun(t, repo, "rev-parse", "agent/y"); got != other.String() {
		t.Errorf("agent/y = %s, want %s", got, other)
	}
}

var zeroHash = mustHash("0000000000000000000000000000000000000000")
