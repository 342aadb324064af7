package gitops

import (
	"bytes"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// countObjects returns `git count-objects -v` without the garbage lines,
// which say nothing about objects.
func countObjects(t *testing.T, repo string) string {
	t.Helper()
	return gitRun(t, repo, "count-objects", "-v")
}

func fsckFull(t *testing.T, repo string) {
	t.Helper()
	if out, err := gitTry(repo, "fsck", "--strict", "--full", "--no-dangling"); err != nil {
		t.Errorf("git fsck --strict --full: %v\n%s", err, out)
	}
}

// commitFiles commits the base tree plus files on branch with CommitTree.
func commitFiles(t *testing.T, repo string, base string, branch string, files ...entry) string {
	t.Helper()
	res, err := CommitTree(t.Context(), repo, mustHash(base), bytes.NewReader(tarOf(t, append([]entry{{name: "./a.txt", body: "a\n"}}, files...)...)), CommitOptions{Branch: branch})
	if err != nil {
		t.Fatal(err)
	}
	return res.Hash.String()
}

// Rollback gives back the space its branches' commits took: once every
// branch is deleted, git counts the objects and pack bytes it counted
// before the run, and fsck finds the repository whole at every step. A pack
// whose blob a remaining branch reuses stays until that branch goes too.
// Regression test: the objects stayed.
func TestRollbackGivesBackTheSpace(t *testing.T) {
	repo, baseHash := newRepo(t, map[string]file{"a.txt": {content: "a\n"}})
	base := baseHash.String()
	before := countObjects(t, repo)
	beforeFiles := objectFiles(t, repo)
	shared := randomBody(1, 300<<10)
	commitFiles(t, repo, base, "agent/one", entry{name: "./shared.bin", body: shared}, entry{name: "./one.bin", body: randomBody(2, 300<<10)})
	two := commitFiles(t, repo, base, "agent/two", entry{name: "./dir/shared-too.bin", body: shared}, entry{name: "./two.bin", body: randomBody(3, 300<<10)})
	// A reflog git keeps for the branch goes with it, as with git branch -D.
	gitRun(t, repo, "update-ref", "--create-reflog", "-m", "away", "refs/heads/agent/two", base)
	gitRun(t, repo, "update-ref", "--create-reflog", "-m", "back", "refs/heads/agent/two", two)
	if _, err := os.Stat(filepath.Join(repo, ".git", "logs", "refs", "heads", "agent", "two")); err != nil {
		t.Fatalf("no reflog made for the fixture: %v", err)
	}
	if got := countObjects(t, repo); got == before {
		t.Fatalf("count-objects unchanged by two commits:\n%s", got)
	}

	if err := Rollback(t.Context(), repo, "agent/one", nil); err != nil {
		t.Fatal(err)
	}
	fsckFull(t, repo)
	if out, err := gitTry(repo, "cat-file", "-e", "agent/two:dir/shared-too.bin"); err != nil {
		t.Fatalf("agent/two lost the blob it shares with agent/one: %v %s", err, out)
	}
	if err := Rollback(t.Context(), repo, "agent/two", nil); err != nil {
		t.Fatal(err)
	}
	fsckFull(t, repo)
	if got := countObjects(t, repo); got != before {
		t.Errorf("git count-objects -v after rollback:\n%s\nbefore the commits:\n%s", got, before)
	}
	if after := objectFiles(t, repo); !sameLines(after, beforeFiles) {
		t.Errorf("object files left: %v", newObjectFiles(beforeFiles, after))
	}
}

// Rollback keeps every object something still reaches: a merge of the
// branch, a cherry-pick of its commit, a file of it staged in the index,
// the HEAD reflog of a checkout of it, a stash made on it, a linked
// worktree on its commit. fsck --full finds nothing missing, and the
// agent's blob is still there.
func TestRollbackKeepsWhatIsStillReachable(t *testing.T) {
	tests := []struct {
		name string
		use  func(t *testing.T, repo string)
	}{
		{"merged", func(t *testing.T, repo string) {
			gitRun(t, repo, "merge", "-q", "--no-ff", "-m", "merge", "agent/x")
		}},
		{"cherry-picked", func(t *testing.T, repo string) {
			gitRun(t, repo, "commit", "-q", "--allow-empty", "-m", "user work")
			gitRun(t, repo, "cherry-pick", "agent/x")
		}},
		{"staged", func(t *testing.T, repo string) {
			gitRun(t, repo, "checkout", "agent/x", "--", "new.bin")
		}},
		{"reflog", func(t *testing.T, repo string) {
			gitRun(t, repo, "checkout", "-q", "agent/x")
			gitRun(t, repo, "checkout", "-q", "main")
		}},
		{"stash", func(t *testing.T, repo string) {
			gitRun(t, repo, "checkout", "-q", "agent/x")
			os.WriteFile(filepath.Join(repo, "new.bin"), []byte("changed\n"), 0o644)
			gitRun(t, repo, "stash", "-q")
			gitRun(t, repo, "checkout", "-q", "main")
			gitRun(t, repo, "reflog", "expire", "--expire=now", "HEAD")
		}},
		{"worktree", func(t *testing.T, repo string) {
			gitRun(t, repo, "worktree", "add", "-q", "--detach", filepath.Join(t.TempDir(), "wt"), "agent/x")
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			repo, base := newRepo(t, map[string]file{"a.txt": {content: "a\n"}})
			body := randomBody(9, 100<<10)
			commitFiles(t, repo, base.String(), "agent/x", entry{name: "./new.bin", body: body})
			blob := gitRun(t, repo, "rev-parse", "agent/x:new.bin")
			tt.use(t, repo)
			before := countObjects(t, repo)
			if err := Rollback(t.Context(), repo, "agent/x", nil); err != nil {
				t.Fatal(err)
			}
			fsckFull(t, repo)
			if out, err := gitTry(repo, "cat-file", "-e", blob); err != nil {
				t.Errorf("the agent's blob is gone: %v %s", err, out)
			}
			if got := countObjects(t, repo); got != before {
				t.Errorf("git count-objects -v changed by the rollback:\n%s\nbefore:\n%s", got, before)
			}
		})
	}
}

// A pack git made (gc) holding the branch's commit with everything else is
// never removed, even when the rest of it is unreachable.
func TestRollbackLeavesGitsPacks(t *testing.T) {
	repo, base := newRepo(t, map[string]file{"a.txt": {content: "a\n"}})
	commitFiles(t, repo, base.String(), "agent/x", entry{name: "./new.bin", body: "new\n"})
	gitRun(t, repo, "gc", "-q", "--prune=now")
	before := objectFiles(t, repo)
	if err := Rollback(t.Context(), repo, "agent/x", nil); err != nil {
		t.Fatal(err)
	}
	if after := objectFiles(t, repo); !sameLines(after, before) {
		t.Errorf("object files changed: before %v, after %v", before, after)
	}
	fsckFull(t, repo)
}

// An index Rollback cannot read (a split index here) leaves every object
// in place: the branch is deleted and the error says the space was not
// reclaimed.
func TestRollbackKeepsObjectsWhenUnsure(t *testing.T) {
	repo, base := newRepo(t, map[string]file{"a.txt": {content: "a\n"}})
	commitFiles(t, repo, base.String(), "agent/x", entry{name: "./new.bin", body: "new\n"})
	gitRun(t, repo, "update-index", "--split-index")
	before := objectFiles(t, repo)
	err := Rollback(t.Context(), repo, "agent/x", nil)
	if !errors.Is(err, ErrNotReclaimed) || !strings.Contains(err.Error(), "branch deleted") {
		t.Fatalf("Rollback: %v, want ErrNotReclaimed", err)
	}
	if branchExists(repo, "agent/x") {
		t.Error("branch not deleted")
	}
	if after := objectFiles(t, repo); !sameLines(after, before) {
		t.Errorf("object files changed: new %v", newObjectFiles(before, after))
	}
	fsckFull(t, repo)
}
