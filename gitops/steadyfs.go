package gitops

import (
	"errors"
	"fmt"
	"io/fs"
	"os"

	"github.com/go-git/go-billy/v5"
	"github.com/go-git/go-git/v5"
	"github.com/go-git/go-git/v5/plumbing/cache"
	"github.com/go-git/go-git/v5/storage/filesystem"
)

// steadyFS is a git directory whose listings survive the files that come
// and go in it while it is listed.
//
// billy's ReadDir stats every entry it lists and fails as a whole, with a
// not-exist error, when one is removed in between; go-git takes that
// error for the directory itself being gone. So a listing of objects/pack
// taken while a concurrent commit renames its temporary pack into place
// gives no pack at all (every packed object, the base commit among them,
// is then "object not found"), and one of refs/heads/agent taken while
// another task holds a branch's lock file gives none of its branches.
// Both are what the tasks of one batch do to a repository at once, and
// what git does beside runner (fetch, gc, a commit).
//
// ReadDir lists again while entries vanish and the directory itself is
// still there; after maxListings it fails with an error that does not
// read as not-exist, so that go-git reports it instead of an empty
// directory.
type steadyFS struct {
	billy.Filesystem
}

// maxListings bounds ReadDir's attempts: an entry vanishes between the
// listing and its stat in a window of microseconds.
const maxListings = 100

func (s steadyFS) ReadDir(path string) ([]os.FileInfo, error) {
	var err error
	for range maxListings {
		var infos []os.FileInfo
		if infos, err = s.Filesystem.ReadDir(path); err == nil || !errors.Is(err, fs.ErrNotExist) {
			return infos, err
		}
		if _, serr := s.Filesystem.Stat(path); errors.Is(serr, fs.ErrNotExist) {
			return nil, err // the directory is gone, or a symlink to none
		}
	}
	return nil, fmt.Errorf("list %s: entries kept vanishing while it was listed (last: %v)", path, err)
}

// Chroot keeps the listings of the sub-tree steady too.
func (s steadyFS) Chroot(path string) (billy.Filesystem, error) {
	sub, err := s.Filesystem.Chroot(path)
	if err != nil {
		return nil, err
	}
	return steadyFS{sub}, nil
}

// Chmod passes go-git's optional billy.Chmod through (it makes the loose
// objects it writes read-only, as git does).
func (s steadyFS) Chmod(name string, mode fs.FileMode) error {
	if c, ok := s.Filesystem.(billy.Chmod); ok {
		return c.Chmod(name, mode)
	}
	return nil
}

// steadyStorage is a storage of the git directory in dir with steady
// listings (see steadyFS) and options opts.
func steadyStorage(dir billy.Filesystem, opts filesystem.Options) *filesystem.Storage {
	return filesystem.NewStorageWithOptions(steadyFS{dir}, cache.NewObjectLRUDefault(), opts)
}

// steadyRepo gives repo, as go-git opened it, steady listings: its storage
// is made again on the same git directory (nothing is read or written).
func steadyRepo(repo *git.Repository) (*git.Repository, error) {
	dir, err := gitDir(repo)
	if err != nil {
		return nil, err
	}
	repo.Storer = steadyStorage(dir, filesystem.Options{})
	return repo, nil
}
