package gitops

import (
	"fmt"
	"os/exec"
	"sync"
	"testing"
)

// The refs are listed whole while other tasks write branches in the
// repository (the attempts of one task commit to it at once): a ref file
// being written is never reported as an empty ref.
func TestRefsListedWhileBranchesAreWritten(t *testing.T) {
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
	reads := 0
	wg.Add(1)
	go func() {
		defer wg.Done()
		for {
			select {
			case <-done:
				return
			default:
			}
			reads++
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
		t.Errorf("listing the refs while branches were written (%d listings): %v", reads, readErr)
	}
}
