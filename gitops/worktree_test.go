package gitops

import (
	"io/fs"
	"os"
	"path/filepath"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

// statTree records the stat data git compares of every path of a
// worktree outside .git.
func statTree(t *testing.T, dir string) map[string]unix.Stat_t {
	t.Helper()
	out := make(map[string]unix.Stat_t)
	err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.Name() == ".git" {
			return filepath.SkipDir
		}
		var st unix.Stat_t
		if err := unix.Lstat(p, &st); err != nil {
			return err
		}
		out[p] = st
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// changedLater makes the agent's work happen later than the clone, as it
// does in a task: every path whose stat data changed since before (a
// rewrite may reuse the inode, size and second of the file it replaces)
// gets a modification time an hour ahead, and the index one two hours
// ahead, so that no entry is racily clean and git trusts the stat data of
// the files nobody touched, as it does in a clone left alone a while.
func changedLater(t *testing.T, dir string, before map[string]unix.Stat_t) {
	t.Helper()
	later := unix.NsecToTimespec(time.Now().Add(time.Hour).UnixNano())
	for p, st := range statTree(t, dir) {
		if old, ok := before[p]; ok && old == st {
			continue
		}
		if err := unix.UtimesNanoAt(unix.AT_FDCWD, p, []unix.Timespec{later, later}, unix.AT_SYMLINK_NOFOLLOW); err != nil {
			t.Fatal(err)
		}
	}
	index := time.Now().Add(2 * time.Hour)
	if err := os.Chtimes(filepath.Join(dir, ".git", "index"), index, index); err != nil {
		t.Fatal(err)
	}
}
