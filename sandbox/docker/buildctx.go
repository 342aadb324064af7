package docker

import (
	"archive/tar"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path"
	"slices"
	"strings"

	"github.com/moby/patternmatcher"
	"github.com/moby/patternmatcher/ignorefile"
)

// buildContext is a directory as a build context: the entries to send,
// in a fixed order, so that the same tree always gives the same tar.
type buildContext struct {
	dir     string
	entries []ctxEntry
}

type ctxEntry struct {
	name string // slash path in the context
	mode fs.FileMode
	size int64
	link string // a symlink's target, as written
}

// maxIgnoreFile caps .dockerignore.
const maxIgnoreFile = 1 << 20

// newBuildContext lists the context of dir: every entry but the top-level
// .git and what .dockerignore leaves out (the Dockerfile and .dockerignore
// are always sent, as the docker CLI does), without following symlinks.
// Devices, sockets and FIFOs are left out. A context whose files sum to
// more than max bytes, or a missing Dockerfile, is an error.
func newBuildContext(dir, dockerfile string, max int64) (*buildContext, error) {
	root, err := os.OpenRoot(dir)
	if err != nil {
		return nil, fmt.Errorf("build context: %w", err)
	}
	defer root.Close()
	if dockerfile == "" || path.IsAbs(dockerfile) || path.Clean(dockerfile) != dockerfile || strings.HasPrefix(dockerfile, "../") || dockerfile == ".." {
		return nil, fmt.Errorf("build: Dockerfile path %q: want a clean path in the repository", dockerfile)
	}
	switch st, err := root.Lstat(dockerfile); {
	case errors.Is(err, fs.ErrNotExist):
		return nil, fmt.Errorf("build: Dockerfile %s does not exist in the repository", dockerfile)
	case err != nil:
		return nil, fmt.Errorf("build: Dockerfile %s: %w", dockerfile, err)
	case !st.Mode().IsRegular():
		return nil, fmt.Errorf("build: Dockerfile %s is not a regular file (a symlink is not followed)", dockerfile)
	}
	pm, err := ignorePatterns(root)
	if err != nil {
		return nil, err
	}
	bc := &buildContext{dir: dir}
	var total int64
	err = fs.WalkDir(root.FS(), ".", func(name string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if name == "." {
			return nil
		}
		if name == ".git" {
			return fs.SkipDir
		}
		keep := name == dockerfile || name == ".dockerignore"
		if !keep && pm != nil {
			skip, err := pm.MatchesOrParentMatches(name)
			if err != nil {
				return err
			}
			if skip {
				if d.IsDir() && !pm.Exclusions() {
					return fs.SkipDir
				}
				return nil
			}
		}
		info, err := d.Info()
		if err != nil {
			return err
		}
		e := ctxEntry{name: name, mode: info.Mode()}
		switch {
		case info.Mode().IsRegular():
			e.size = info.Size()
			total += e.size
			if total > max {
				return fmt.Errorf("%w: over %d MiB; leave out what the image does not need with a .dockerignore", ErrContextTooLarge, max>>20)
			}
		case info.IsDir():
		case info.Mode()&fs.ModeSymlink != 0:
			if e.link, err = root.Readlink(name); err != nil {
				return err
			}
		default:
			return nil // devices, sockets, FIFOs
		}
		bc.entries = append(bc.entries, e)
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("build context: %w", err)
	}
	slices.SortFunc(bc.entries, func(a, b ctxEntry) int { return strings.Compare(a.name, b.name) })
	return bc, nil
}

// ignorePatterns reads .dockerignore, bounded; nil when there is none.
func ignorePatterns(root *os.Root) (*patternmatcher.PatternMatcher, error) {
	f, err := root.Open(".dockerignore")
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("build context: .dockerignore: %w", err)
	}
	defer f.Close()
	if st, err := f.Stat(); err != nil || !st.Mode().IsRegular() || st.Size() > maxIgnoreFile {
		return nil, fmt.Errorf("build context: .dockerignore must be a regular file of at most %d KiB", maxIgnoreFile>>10)
	}
	patterns, err := ignorefile.ReadAll(f)
	if err != nil {
		return nil, fmt.Errorf("build context: .dockerignore: %w", err)
	}
	pm, err := patternmatcher.New(patterns)
	if err != nil {
		return nil, fmt.Errorf("build context: .dockerignore: %w", err)
	}
	return pm, nil
}

// write writes the context as a tar stream with fixed owners and times.
// Files are opened inside the context's root, so a file replaced by a
// symlink since the listing cannot lead out of it, and a file that
// changed size since is an error.
func (bc *buildContext) write(w io.Writer) error {
	root, err := os.OpenRoot(bc.dir)
	if err != nil {
		return fmt.Errorf("build context: %w", err)
	}
	defer root.Close()
	tw := tar.NewWriter(w)
	for _, e := range bc.entries {
		h := &tar.Header{Name: e.name, Mode: int64(e.mode.Perm()), Format: tar.FormatPAX}
		switch {
		case e.mode.IsDir():
			h.Typeflag, h.Name = tar.TypeDir, e.name+"/"
		case e.mode&fs.ModeSymlink != 0:
			h.Typeflag, h.Linkname = tar.TypeSymlink, e.link
		default:
			h.Typeflag, h.Size = tar.TypeReg, e.size
		}
		if err := tw.WriteHeader(h); err != nil {
			return err
		}
		if h.Typeflag == tar.TypeReg {
			if err := copyFile(root, e, tw); err != nil {
				return fmt.Errorf("build context: %s: %w", e.name, err)
			}
		}
	}
	return tw.Close()
}

func copyFile(root *os.Root, e ctxEntry, w io.Writer) error {
	f, err := root.OpenFile(e.name, os.O_RDONLY, 0)
	if err != nil {
		return err
	}
	defer f.Close()
	n, err := io.Copy(w, io.LimitReader(f, e.size))
	if err == nil && n != e.size {
		err = fmt.Errorf("changed while it was read")
	}
	return err
}
