package gitops

import (
	"cmp"
	"errors"
	"fmt"
	"io"
	"slices"
	"strings"

	"github.com/go-git/go-git/v5/plumbing"
)

// DefaultMaxCommitSize is CommitOptions.MaxCommitSize when zero: well below
// the sandbox's default disk (4 GiB), so that a task cannot fill the
// user's disk through the repository.
const DefaultMaxCommitSize = 1 << 30

// ErrCommitTooLarge matches every *CommitSizeError.
var ErrCommitTooLarge = errors.New("commit too large")

// errNotSpooled: the content of an entry that must be read was not kept,
// the spool being full.
var errNotSpooled = fmt.Errorf("%w: its content was not kept, the workspace's new files (ignored ones included) filling the limits.commit_size the host keeps while reading them", ErrCommitTooLarge)

// maxListedFiles caps the files a CommitSizeError names.
const maxListedFiles = 10

// SizedFile is a path of the snapshot and the size of its content.
type SizedFile struct {
	Path string
	Size int64
}

// CommitSizeError reports a snapshot whose new content is over
// CommitOptions.MaxCommitSize: nothing was written to the repository.
// Sizes are those of the blobs (the files' bytes after line-ending
// conversion, uncompressed); content the repository already holds does not
// count.
type CommitSizeError struct {
	// Limit is the cap; Total the bytes of new content counted.
	Limit, Total int64
	// Ignored is set when the files the commit would keep fit, but the
	// new content read from the snapshot, files not yet known to be
	// ignored when read included, did not fit in a spool of Limit bytes:
	// Largest then lists files of either kind.
	Ignored bool
	// Largest are the largest new files, largest first (at most 10).
	Largest []SizedFile
}

func (e *CommitSizeError) Error() string {
	var b strings.Builder
	if e.Ignored {
		fmt.Fprintf(&b, "the workspace's new files, including ignored ones not yet known to be ignored when read, hold more than the %s a commit may add (limits.commit_size), which is all the host keeps while it reads them", formatBytes(e.Limit))
	} else {
		fmt.Fprintf(&b, "the commit would add %s of new content, over the %s limit (limits.commit_size)", formatBytes(e.Total), formatBytes(e.Limit))
	}
	b.WriteString("; largest files:")
	for _, f := range e.Largest {
		fmt.Fprintf(&b, " %q (%s),", f.Path, formatBytes(f.Size))
	}
	return strings.TrimSuffix(b.String(), ",")
}

// Is makes errors.Is(err, ErrCommitTooLarge) true.
func (e *CommitSizeError) Is(target error) bool { return target == ErrCommitTooLarge }

// formatBytes writes n in the largest binary unit that keeps it readable.
func formatBytes(n int64) string {
	switch {
	case n >= 1<<30:
		return fmt.Sprintf("%.1f GiB", float64(n)/(1<<30))
	case n >= 1<<20:
		return fmt.Sprintf("%.1f MiB", float64(n)/(1<<20))
	case n >= 1<<10:
		return fmt.Sprintf("%.1f KiB", float64(n)/(1<<10))
	}
	return fmt.Sprintf("%d bytes", n)
}

// largest returns at most maxListedFiles of files, largest first, then by
// path.
func largest(files []SizedFile) []SizedFile {
	slices.SortFunc(files, func(a, b SizedFile) int {
		if c := cmp.Compare(b.Size, a.Size); c != 0 {
			return c
		}
		return strings.Compare(a.Path, b.Path)
	})
	return files[:min(len(files), maxListedFiles)]
}

// newContent adds the blobs of files the repository lacks to objs, each
// once, and refuses them with a *CommitSizeError when they add up to more
// than limit, or when one of them was not kept by the spool (bounded by
// the same limit).
func newContent(snap *snapshot, files map[string]treeEntry, limit int64, objs *newObjects) error {
	var total int64
	var added []SizedFile
	missing := false
	seen := make(map[plumbing.Hash]bool)
	for p, te := range files {
		e, ok := snap.entries[p]
		if !ok || e.kind == kindDir || e.hash != te.hash || e.stored {
			continue // from the base tree (gitlink), or in the repository
		}
		added = append(added, SizedFile{Path: p, Size: e.size})
		if seen[e.hash] {
			continue
		}
		seen[e.hash] = true
		total += e.size
		missing = missing || e.unspooled
		objs.addBlob(e.hash, e.size, func() io.Reader { return snap.content(e) })
	}
	switch {
	case total > limit:
		return &CommitSizeError{Limit: limit, Total: total, Largest: largest(added)}
	case missing:
		var all []SizedFile
		for p, e := range snap.entries {
			if e.kind == kindFile && !e.stored {
				all = append(all, SizedFile{Path: p, Size: e.size})
			}
		}
		return &CommitSizeError{Limit: limit, Total: total, Ignored: true, Largest: largest(all)}
	}
	return nil
}
