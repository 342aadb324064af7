package gitops

import (
	"bufio"
	"errors"
	"fmt"
	"io/fs"
	"path"
	"strings"

	"github.com/go-git/go-billy/v5"
	"github.com/go-git/go-git/v5"
	"github.com/go-git/go-git/v5/plumbing"
)

// ErrRefConflict matches every *RefConflictError.
var ErrRefConflict = errors.New("branch collides with an existing ref")

// RefConflictError reports a branch that git cannot create beside an
// existing ref, because one would be a directory of the other: refs/heads/a
// and refs/heads/a/b cannot both exist (git keeps each as a file, and
// packed-refs obeys the same rule).
type RefConflictError struct {
	Branch   string
	Existing string // a ref, or a directory under refs/ ending in "/"
}

func (e *RefConflictError) Error() string {
	return fmt.Sprintf("branch %s cannot be created: %s exists, and git cannot hold both a ref and refs below it; choose another branch",
		e.Branch, e.Existing)
}

// Is makes errors.Is(err, ErrRefConflict) true.
func (e *RefConflictError) Is(target error) bool { return target == ErrRefConflict }

// refuseConflict returns a *RefConflictError when a ref of repo is a
// directory of ref (refs/heads/a for refs/heads/a/b) or lies below it.
func refuseConflict(repo *git.Repository, ref plumbing.ReferenceName) error {
	fsys, err := gitDir(repo)
	if err != nil {
		return err
	}
	idx, err := readRefIndex(fsys)
	if err != nil {
		return err
	}
	return idx.refuse(ref)
}

// refIndex is the set of a repository's ref names, loose and packed, with
// the directories they make.
type refIndex struct {
	refs map[string]bool
	// dirs maps each directory of a ref ("refs/heads/agent" for
	// refs/heads/agent/a) to one ref below it; a loose directory holding
	// no ref maps to itself, with a trailing '/', since it too stands in
	// the way of a ref of that name.
	dirs map[string]string
}

// readRefIndex reads the ref names of the repository whose git directory
// is fsys. It does not parse the refs: files and directories that vanish
// while it reads (a concurrent update or pack-refs) are skipped, lock
// files are not refs.
func readRefIndex(fsys billy.Filesystem) (*refIndex, error) {
	idx := &refIndex{refs: map[string]bool{}, dirs: map[string]string{}}
	if err := idx.walk(fsys, "refs"); err != nil {
		return nil, fmt.Errorf("list refs: %w", err)
	}
	f, err := fsys.Open("packed-refs")
	if errors.Is(err, fs.ErrNotExist) {
		return idx, nil
	}
	if err != nil {
		return nil, fmt.Errorf("read packed-refs: %w", err)
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	sc.Buffer(nil, 1<<20)
	for sc.Scan() {
		line := sc.Text()
		if line == "" || line[0] == '#' || line[0] == '^' {
			continue
		}
		if _, name, ok := strings.Cut(line, " "); ok {
			idx.add(name)
		}
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("read packed-refs: %w", err)
	}
	return idx, nil
}

// walk adds the loose refs and directories under dir.
func (idx *refIndex) walk(fsys billy.Filesystem, dir string) error {
	entries, err := fsys.ReadDir(dir)
	if errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	if err != nil {
		return err
	}
	if _, ok := idx.dirs[dir]; !ok && dir != "refs" {
		idx.dirs[dir] = dir + "/"
	}
	for _, e := range entries {
		name := path.Join(dir, e.Name())
		switch {
		case e.IsDir():
			if err := idx.walk(fsys, name); err != nil {
				return err
			}
		case e.Mode().IsRegular() && !strings.HasSuffix(name, ".lock"):
			idx.add(name)
		}
	}
	return nil
}

// add records the ref name and its directories.
func (idx *refIndex) add(name string) {
	idx.refs[name] = true
	for dir := path.Dir(name); dir != "refs" && dir != "." && dir != "/"; dir = path.Dir(dir) {
		if d, ok := idx.dirs[dir]; !ok || strings.HasSuffix(d, "/") {
			idx.dirs[dir] = name
		}
	}
}

// refuse returns a *RefConflictError when ref cannot be created beside the
// indexed refs. ref itself existing is no conflict.
func (idx *refIndex) refuse(ref plumbing.ReferenceName) error {
	name := ref.String()
	for dir := path.Dir(name); dir != "refs" && dir != "." && dir != "/"; dir = path.Dir(dir) {
		if idx.refs[dir] {
			return &RefConflictError{Branch: ref.Short(), Existing: dir}
		}
	}
	if below, ok := idx.dirs[name]; ok {
		return &RefConflictError{Branch: ref.Short(), Existing: below}
	}
	return nil
}
