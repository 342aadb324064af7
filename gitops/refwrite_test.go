package gitops

import (
	"fmt"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/go-git/go-git/v5/plumbing"
)

// A branch being written is never seen empty: a clone, or a task listing
// the refs, reads the repository while other tasks set branches in it (the
// attempts of one task commit to the same repository at once). go-git
// rewrites a ref file in place, which a reader could catch empty.
func TestBranchWritesAreAtomic(t *testing.T) {
	repo := t.TempDir()
	for _, args := range [][]string{{"init", "-q", "-b", "main"}, {"commit", "-q", "--allow-empty", "-m", "first"}} {
		cmd := exec.Command("git", args...)
		cmd.Dir = repo
		cmd.Env = append(cmd.Environ(), "GIT_CONFIG_GLOBAL=/dev/null", "GIT_AUTHOR_NAME=t", "GIT_AUTHOR_EMAIL=t@t",
			"GIT_COMMITTER_NAME=t", "GIT_COMMITTER_EMAIL=t@t")
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("git %v: %v\n%s", args, err, out)
		}
	}
	head, _, _, err := BranchHead(repo, "main")
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan struct{})
	var wg sync.WaitGroup
	var readErr error
	wg.Add(1)
	go func() {
		defer wg.Done()
		for {
			select {
			case <-done:
				return
			default:
			}
			if _, err := Inspect(repo); err != nil && readErr == nil {
				readErr = err
			}
		}
	}()
	for i := range 300 {
		if err := PointBranch(repo, fmt.Sprintf("agent/t-attempt-%d", i), head, false); err != nil {
			t.Fatal(err)
		}
	}
	close(done)
	wg.Wait()
	if readErr != nil {
		t.Errorf("listing the refs while branches were written: %v", readErr)
	}
	out, err := exec.Command("git", "-C", repo, "for-each-ref", "--count=400", "--format=%(objectname)", "refs/heads/agent/").Output()
	if err != nil {
		t.Fatal(err)
	}
	if lines := strings.Fields(string(out)); len(lines) != 300 || lines[0] != head.String() {
		t.Errorf("git lists %d branches, the first at %v", len(lines), lines[:min(1, len(lines))])
	}
	if left, _ := filepath.Glob(filepath.Join(repo, ".git", "refs", "heads", "agent", "*.lock")); len(left) > 0 {
		t.Errorf("lock files left: %v", left)
	}
	_ = plumbing.ZeroHash
}
