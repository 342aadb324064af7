package gitops

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/go-git/go-billy/v5/osfs"
	"github.com/go-git/go-git/v5/plumbing"
	"github.com/go-git/go-git/v5/plumbing/storer"
)

// TestCommitTreeConcurrentBaseInPack runs 48 tasks committing to one
// repository at once, as a batch at concurrency 48 does, where the base
// commit is in a pack (as after git gc, or in any cloned repository): a
// task that listed objects/pack while another renamed its temporary pack
// into place found no pack, and so no base commit ("read base commit …:
// object not found").
func TestCommitTreeConcurrentBaseInPack(t *testing.T) {
	files := map[string]file{}
	for i := range 100 {
		files[fmt.Sprintf("pkg/d%d/f%03d.txt", i%4, i)] = file{content: fmt.Sprintf("file %d\n", i)}
	}
	const tasks = 48
	for trial := range 6 {
		repo, base := newRepo(t, files)
		gitRun(t, repo, "gc", "-q")
		if loose := gitRun(t, repo, "count-objects"); !strings.HasPrefix(loose, "0 objects") {
			t.Fatalf("after gc: %s, want every object packed", loose)
		}
		var wg sync.WaitGroup
		hashes := make([]plumbing.Hash, tasks)
		for i := range tasks {
			wg.Add(1)
			go func() {
				defer wg.Done()
				snap := tarOf(t, entry{name: "./DONE.txt", body: fmt.Sprintf("task %d\n", i)})
				res, err := CommitTree(context.Background(), repo, base, bytes.NewReader(snap), CommitOptions{Branch: fmt.Sprintf("agent/t%02d", i)})
				if err != nil {
					t.Errorf("trial %d, task %d: %v", trial, i, err)
					return
				}
				hashes[i] = res.Hash
			}()
		}
		wg.Wait()
		if t.Failed() {
			return
		}
		for i, h := range hashes {
			if got := gitRun(t, repo, "rev-parse", fmt.Sprintf("agent/t%02d", i)); got != h.String() {
				t.Fatalf("trial %d: agent/t%02d = %s, want %s", trial, i, got, h)
			}
		}
		fsckStrict(t, repo)
	}
}

// TestOpenRepoListsRefsWhileLocksComeAndGo lists the branches while other
// tasks take and release their branches' locks (refs/heads/agent/*.lock)
// in the same directory: every branch is listed every time (go-git lists
// a lock file as a ref too: the locks here hold a hash, as git's do once
// written, and are not counted). go-git alone
// took a lock file that vanished while it listed for the whole directory
// being gone, and listed none of its branches: a conflict check or a
// reachability walk would have missed them.
func TestOpenRepoListsRefsWhileLocksComeAndGo(t *testing.T) {
	repo, base := newRepo(t, map[string]file{"a.txt": {content: "a\n"}})
	const branches = 20
	for i := range branches {
		gitRun(t, repo, "branch", fmt.Sprintf("agent/b%02d", i), base.String())
	}
	lockDir := filepath.Join(repo, ".git", "refs", "heads", "agent")
	// Each lock appears whole (a hard link of a file holding a hash) and
	// goes: the entries come and go, no lock is ever read empty.
	locked := filepath.Join(t.TempDir(), "lock")
	if err := os.WriteFile(locked, []byte(base.String()+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	var stop atomic.Bool
	var wg sync.WaitGroup
	for w := range 2 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for n := 0; !stop.Load(); n++ {
				p := filepath.Join(lockDir, fmt.Sprintf("w%d-%d.lock", w, n%50))
				if err := os.Link(locked, p); err != nil {
					t.Error(err)
					return
				}
				os.Remove(p)
			}
		}()
	}
	defer func() { stop.Store(true); wg.Wait() }()
	for round := range 300 {
		r, err := openRepo(repo)
		if err != nil {
			t.Fatal(err)
		}
		it, err := r.References()
		if err != nil {
			t.Fatal(err)
		}
		n := 0
		err = it.ForEach(func(ref *plumbing.Reference) error {
			if name := ref.Name().String(); strings.HasPrefix(name, "refs/heads/agent/b") {
				n++
			}
			return nil
		})
		if err != nil && err != storer.ErrStop {
			t.Fatalf("round %d: %v", round, err)
		}
		if n != branches {
			t.Fatalf("round %d: listed %d of the %d agent branches", round, n, branches)
		}
	}
}

// A directory that is gone, or a symlink to none, lists as not existing
// at once, as go-git expects, not after steadyFS's retries.
func TestSteadyFSMissingDirectory(t *testing.T) {
	dir := t.TempDir()
	if err := os.Symlink(filepath.Join(dir, "nowhere"), filepath.Join(dir, "dangling")); err != nil {
		t.Fatal(err)
	}
	s := steadyFS{osfs.New(dir)}
	for _, p := range []string{"gone", "dangling"} {
		if _, err := s.ReadDir(p); !errors.Is(err, fs.ErrNotExist) {
			t.Errorf("ReadDir(%s): %v, want a not-exist error", p, err)
		}
	}
}
