package gitops

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/go-git/go-git/v5"
	"github.com/go-git/go-git/v5/plumbing"
	"github.com/go-git/go-git/v5/plumbing/filemode"
	"github.com/go-git/go-git/v5/plumbing/format/index"
	"github.com/go-git/go-git/v5/plumbing/object"
	"github.com/go-git/go-git/v5/plumbing/storer"

	"github.com/runner-dev/runner/internal/panics"
)

// checkoutWorkers is how many files are written at once. Writing a file is
// mostly waiting on the file system's metadata (create, write, close), so
// more writers than cores pays.
const checkoutWorkers = 8

// inlineBlob is the size up to which a blob is read into memory and handed
// to a writer; a larger one is streamed to its file by the reader itself.
const inlineBlob = 1 << 20

// checkoutFresh writes the tree of commit, read from repo, into dir, the
// worktree of a clone made without a checkout, and records it in the
// clone's index (dst), as the checkout of `git clone` does. Since dir holds
// nothing but .git, it neither stats nor looks up each path as go-git's
// Worktree.Reset does: it walks the tree
// once, reads each blob once, and writes the files on several goroutines.
// Names are validated by the tree walker (no "..", no .git in any
// spelling), and a path that already exists, a symlink included, is an
// error, so nothing is ever written through a link.
//
// Files are written as git writes them with its default configuration:
// the line endings asked for by the tree's .gitattributes files
// (checkoutAttrs). It returns a note for each attribute it does not apply.
func checkoutFresh(ctx context.Context, repo *git.Repository, dst storer.IndexStorer, dir string, commit plumbing.Hash) ([]string, error) {
	c, err := repo.CommitObject(commit)
	if err != nil {
		return nil, fmt.Errorf("checkout %s: %w", commit, err)
	}
	tree, err := c.Tree()
	if err != nil {
		return nil, fmt.Errorf("checkout %s: %w", commit, err)
	}
	attrs, err := newCheckoutAttrs(repo, tree)
	if err != nil {
		return nil, fmt.Errorf("checkout %s: %w", commit, err)
	}
	w := newCheckoutWriter(ctx, dir, attrs)
	walker := object.NewTreeWalker(tree, true, nil)
	defer walker.Close()
	for {
		name, entry, err := walker.Next()
		if errors.Is(err, io.EOF) {
			break
		}
		if err == nil {
			err = ctx.Err()
		}
		if err == nil {
			err = w.add(repo, name, entry)
		}
		if err != nil {
			w.wait()
			return nil, fmt.Errorf("checkout %s: %w", commit, err)
		}
	}
	entries, err := w.wait()
	if err != nil {
		return nil, fmt.Errorf("checkout %s: %w", commit, err)
	}
	slices.SortFunc(entries, func(a, b *index.Entry) int { return strings.Compare(a.Name, b.Name) })
	if err := dst.SetIndex(&index.Index{Version: 2, Entries: entries}); err != nil {
		return nil, fmt.Errorf("checkout %s: write index: %w", commit, err)
	}
	return attrs.notes(), nil
}

// fileJob is a file for a writer: its index entry and, for a small file,
// its content.
type fileJob struct {
	entry   *index.Entry
	content []byte
}

// checkoutWriter writes the files of one checkout and collects their index
// entries.
type checkoutWriter struct {
	dir   string
	attrs *checkoutAttrs
	jobs  chan fileJob
	wg    sync.WaitGroup

	mu      sync.Mutex
	entries []*index.Entry
	err     error
}

func newCheckoutWriter(ctx context.Context, dir string, attrs *checkoutAttrs) *checkoutWriter {
	w := &checkoutWriter{dir: dir, attrs: attrs, jobs: make(chan fileJob, 4*checkoutWorkers)}
	for range checkoutWorkers {
		w.wg.Add(1)
		go func() {
			defer w.wg.Done()
			for j := range w.jobs {
				w.done(j.entry, w.write(ctx, j))
			}
		}()
	}
	return w
}

// write writes the file of one job; a panic is the job's error (and is
// reported to ctx, see package panics), so the other jobs still drain.
func (w *checkoutWriter) write(ctx context.Context, j fileJob) (err error) {
	defer panics.Catch(ctx, &err)
	return writeNewFile(w.path(j.entry.Name), j.entry, j.content)
}

func (w *checkoutWriter) path(name string) string {
	return filepath.Join(w.dir, filepath.FromSlash(name))
}

// done records the entry of a file written, or the first error.
func (w *checkoutWriter) done(e *index.Entry, err error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if err != nil {
		if w.err == nil {
			w.err = fmt.Errorf("%s: %w", e.Name, err)
		}
		return
	}
	w.entries = append(w.entries, e)
}

func (w *checkoutWriter) failed() error {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.err
}

// wait lets the writers finish and returns the index entries.
func (w *checkoutWriter) wait() ([]*index.Entry, error) {
	close(w.jobs)
	w.wg.Wait()
	return w.entries, w.err
}

// add checks out one entry of the tree walk. Directories come before what
// they hold, and are made here, so that writers never need to.
func (w *checkoutWriter) add(repo *git.Repository, name string, te object.TreeEntry) error {
	if err := w.failed(); err != nil {
		return err
	}
	e := &index.Entry{Name: name, Hash: te.Hash, Mode: te.Mode}
	switch te.Mode {
	case filemode.Dir:
		if err := w.attrs.enterDir(repo, name, te.Hash); err != nil {
			return fmt.Errorf("%s: %w", name, err)
		}
		if err := os.Mkdir(w.path(name), 0o755); err != nil {
			return fmt.Errorf("%s: %w", name, err)
		}
		return nil
	case filemode.Submodule:
		// Not initialised, as after `git clone` without --recurse-submodules:
		// an empty directory, and the commit in the index.
		w.done(e, os.Mkdir(w.path(name), 0o755))
		return nil
	case filemode.Regular, filemode.Deprecated, filemode.Executable, filemode.Symlink:
	default:
		return fmt.Errorf("%s: unsupported mode %s", name, te.Mode)
	}
	blob, err := repo.BlobObject(te.Hash)
	if err != nil {
		return fmt.Errorf("%s: %w", name, err)
	}
	act := crlfBinary
	if te.Mode != filemode.Symlink {
		act = w.attrs.action(name)
	}
	if blob.Size > inlineBlob && te.Mode != filemode.Symlink {
		w.done(e, streamNewFile(w.path(name), e, blob, act))
		return nil
	}
	r, err := blob.Reader()
	if err != nil {
		return fmt.Errorf("%s: %w", name, err)
	}
	content, err := io.ReadAll(r)
	r.Close()
	if err != nil {
		return fmt.Errorf("%s: %w", name, err)
	}
	if act.outputsCRLF() {
		content = toWorktree(content, act)
	}
	e.Size = uint32(len(content))
	w.jobs <- fileJob{entry: e, content: content}
	return nil
}

// writeNewFile creates the file or symlink of e at p, which must not exist.
func writeNewFile(p string, e *index.Entry, content []byte) error {
	if e.Mode == filemode.Symlink {
		e.ModifiedAt = time.Now()
		e.CreatedAt = e.ModifiedAt
		return os.Symlink(string(content), p)
	}
	return fillNewFile(p, e, func(f *os.File) error {
		_, err := f.Write(content)
		return err
	})
}

// streamNewFile creates the file of e at p from a large blob, converted
// as act asks, and records its size in e.
func streamNewFile(p string, e *index.Entry, blob *object.Blob, act crlfAction) error {
	addCR := false
	if act.outputsCRLF() {
		var st textStats
		if err := readBlob(blob, &st); err != nil {
			return err
		}
		st.finish()
		addCR = act.addsCR(&st)
	}
	r, err := blob.Reader()
	if err != nil {
		return err
	}
	defer r.Close()
	var src io.Reader = r
	if addCR {
		src = newLFToCRLF(r)
	}
	return fillNewFile(p, e, func(f *os.File) error {
		n, err := io.Copy(f, src)
		e.Size = uint32(n)
		return err
	})
}

// fillNewFile creates a regular file at p, which must not exist (O_EXCL
// refuses a symlink there too), fills it, and records its time in e. The
// umask applies to its mode, as with git.
func fillNewFile(p string, e *index.Entry, fill func(*os.File) error) error {
	perm := os.FileMode(0o644)
	if e.Mode == filemode.Executable {
		perm = 0o755
	}
	f, err := os.OpenFile(p, os.O_WRONLY|os.O_CREATE|os.O_EXCL, perm)
	if err != nil {
		return err
	}
	err = fill(f)
	if err == nil {
		var fi os.FileInfo
		if fi, err = f.Stat(); err == nil {
			e.ModifiedAt, e.CreatedAt = fi.ModTime(), fi.ModTime()
		}
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	return err
}
