package gitops

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path"

	"github.com/go-git/go-git/v5"
	"github.com/go-git/go-git/v5/plumbing"
	"github.com/go-git/go-git/v5/plumbing/filemode"
)

// crSeen is an io.Writer that notes whether a CR went through it.
type crSeen struct{ seen bool }

func (c *crSeen) Write(b []byte) (int, error) {
	if !c.seen {
		for _, x := range b {
			if x == '\r' {
				c.seen = true
				break
			}
		}
	}
	return len(b), nil
}

// normalizer turns the content of the snapshot's files into the blobs
// `git add -A` stores for them, in a clone of base made by Clone (which
// checks out as `git clone` does, see checkoutFresh) and left alone since,
// with git's default configuration:
//
//   - a file whose bytes are what the checkout wrote for its base blob is
//     unchanged: git finds its stat data clean and keeps the blob, even
//     where converting it again would give another one (a CRLF blob under
//     "text");
//   - any other file is converted as its attributes in the snapshot (its
//     .gitattributes files, any depth, and the repository's
//     info/attributes) ask: text, text=auto with git's binary heuristic
//     and its "safer autocrlf" rule (a tracked file whose base blob has
//     CRLF is not converted by text=auto), eol, -text and binary.
//
// Only CRs are ever removed, so a file without one is never converted and
// is not looked at again.
type normalizer struct {
	repo  *git.Repository
	base  map[string]treeEntry
	snap  *snapshot
	attrs *gitAttributes // of the snapshot
	// baseAttrs are those the checkout applied, read when first needed.
	baseAttrs *gitAttributes
}

// applyAttributes converts the snapshot's file entries in place, as
// normalizer says, before the tree is planned. It returns the snapshot's
// attributes.
func applyAttributes(ctx context.Context, repo *git.Repository, base map[string]treeEntry, snap *snapshot) (*gitAttributes, error) {
	attrs, err := snapshotAttributes(repo, snap)
	if err != nil {
		return nil, err
	}
	n := &normalizer{repo: repo, base: base, snap: snap, attrs: attrs}
	for p, e := range snap.entries {
		if e.kind != kindFile || !e.cr || e.unspooled {
			// Content not kept cannot be converted; committing it
			// is refused (see checkNewContent).
			continue
		}
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		if err := n.normalize(p, e); err != nil {
			return nil, fmt.Errorf("%s: apply attributes: %w", p, err)
		}
	}
	return attrs, nil
}

// snapshotAttributes reads the attributes `git add` sees in the workspace:
// its .gitattributes files (a symlink is read as the text it points to,
// as git ends up doing through the index) and the repository's
// info/attributes.
func snapshotAttributes(repo *git.Repository, snap *snapshot) (*gitAttributes, error) {
	info, err := infoAttributes(repo)
	if err != nil {
		return nil, err
	}
	root, rootOrigin, err := snapAttrFile(repo, snap, snap.entries[".gitattributes"])
	if err != nil {
		return nil, err
	}
	attrs, err := newGitAttributes(root, rootOrigin, info)
	if err != nil {
		return nil, err
	}
	for p, e := range snap.entries {
		dir := path.Dir(p)
		if path.Base(p) != ".gitattributes" || dir == "." {
			continue
		}
		content, origin, err := snapAttrFile(repo, snap, e)
		if err != nil {
			return nil, err
		}
		if err := attrs.addDir(dir, content, origin); err != nil {
			return nil, err
		}
	}
	return attrs, nil
}

func snapAttrFile(repo *git.Repository, snap *snapshot, e *snapEntry) ([]byte, attrOrigin, error) {
	switch {
	case e == nil || e.kind == kindDir:
		return nil, attrFromFile, nil
	case e.kind == kindSymlink:
		return []byte(e.target), attrFromBlob, nil
	case e.size >= attrMaxFile:
		return nil, attrFromFile, nil
	}
	r, err := snap.raw(repo, e)
	if err != nil {
		return nil, 0, err
	}
	defer r.Close()
	b, err := io.ReadAll(r)
	if err != nil {
		return nil, 0, fmt.Errorf("read %s: %w", e.raw, err)
	}
	return b, attrFromFile, nil
}

// infoAttributes returns the repository's info/attributes, or nothing.
func infoAttributes(repo *git.Repository) ([]byte, error) {
	fs, err := gitDir(repo)
	if err != nil {
		return nil, err
	}
	f, err := fs.Open("info/attributes")
	if errors.Is(err, os.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("open info/attributes: %w", err)
	}
	defer f.Close()
	b, err := io.ReadAll(io.LimitReader(f, attrMaxFile))
	if err != nil {
		return nil, fmt.Errorf("read info/attributes: %w", err)
	}
	if len(b) >= attrMaxFile {
		return nil, nil // git ignores it too
	}
	return b, nil
}

// normalize decides the blob of the file p, whose content holds a CR.
func (n *normalizer) normalize(p string, e *snapEntry) error {
	b, tracked := n.base[p]
	tracked = tracked && b.mode != filemode.Submodule
	clean := converted{hash: e.hash, size: e.size}
	if act := n.attrs.lookup(p).action(); act != crlfBinary {
		st, err := n.stats(e)
		if err != nil {
			return err
		}
		drop, err := act.dropsCR(&st, func() (bool, error) {
			if !tracked {
				return false, nil
			}
			bst, err := n.blobStats(b.hash)
			return hasCRLF(&bst), err
		})
		if err != nil {
			return err
		}
		if drop {
			if clean, err = n.spoolLF(e, st.size-int64(st.crlf)); err != nil {
				return err
			}
		}
	}
	// git trusts the stat data of a file whose type, executable bit and
	// content are as checked out: it keeps the blob.
	sameMode := objectType(b.mode) == filemode.Regular && (b.mode == filemode.Executable) == (e.mode == filemode.Executable)
	if tracked && clean.hash != b.hash && sameMode {
		untouched, err := n.checkedOutAs(p, b.hash, e.hash)
		if err != nil {
			return err
		}
		if untouched {
			n.snap.dropSpooled(clean)
			size, err := n.repo.Storer.EncodedObjectSize(b.hash)
			if err != nil {
				return fmt.Errorf("read blob %s: %w", b.hash, err)
			}
			clean = converted{hash: b.hash, size: size, stored: true}
		}
	}
	if clean.hash != e.hash {
		e.hash, e.size, e.stored, e.offset, e.unspooled = clean.hash, clean.size, clean.stored, clean.offset, clean.unspooled
	}
	return nil
}

// checkedOutAs reports whether the checkout of base under the base tree's
// attributes has the hash raw, that is whether the file is as Clone left
// it.
func (n *normalizer) checkedOutAs(p string, base, raw plumbing.Hash) (bool, error) {
	if n.baseAttrs == nil {
		a, err := treeAttributes(n.repo, n.base)
		if err != nil {
			return false, err
		}
		n.baseAttrs = a
	}
	act := n.baseAttrs.lookup(p).action()
	if !act.outputsCRLF() {
		return base == raw, nil // the checkout wrote the blob as it is
	}
	st, err := n.blobStats(base)
	if err != nil {
		return false, err
	}
	if !act.addsCR(&st) {
		return base == raw, nil
	}
	r, err := blobReader(n.repo, base)
	if err != nil {
		return false, err
	}
	defer r.Close()
	h := plumbing.NewHasher(plumbing.BlobObject, st.size+int64(st.loneLF))
	if _, err := io.Copy(h, newLFToCRLF(r)); err != nil {
		return false, fmt.Errorf("read blob %s: %w", base, err)
	}
	return h.Sum() == raw, nil
}

// treeAttributes reads the attributes of the base tree's .gitattributes
// files, as the checkout did (no info/attributes: a fresh clone has none).
func treeAttributes(repo *git.Repository, base map[string]treeEntry) (*gitAttributes, error) {
	var root []byte
	if e, ok := base[".gitattributes"]; ok && e.mode != filemode.Submodule {
		var err error
		if root, err = readAttrBlob(repo.Storer, e.hash); err != nil {
			return nil, err
		}
	}
	attrs, err := newGitAttributes(root, attrFromBlob, nil)
	if err != nil {
		return nil, err
	}
	for p, e := range base {
		dir := path.Dir(p)
		if path.Base(p) != ".gitattributes" || dir == "." || e.mode == filemode.Submodule {
			continue
		}
		content, err := readAttrBlob(repo.Storer, e.hash)
		if err != nil {
			return nil, err
		}
		if err := attrs.addDir(dir, content, attrFromBlob); err != nil {
			return nil, err
		}
	}
	return attrs, nil
}

func (n *normalizer) stats(e *snapEntry) (textStats, error) {
	var st textStats
	r, err := n.snap.raw(n.repo, e)
	if err != nil {
		return st, err
	}
	defer r.Close()
	if _, err := io.Copy(&st, r); err != nil {
		return st, fmt.Errorf("read %s: %w", e.raw, err)
	}
	st.finish()
	return st, nil
}

func (n *normalizer) blobStats(h plumbing.Hash) (textStats, error) {
	var st textStats
	r, err := blobReader(n.repo, h)
	if err != nil {
		return st, err
	}
	defer r.Close()
	if _, err := io.Copy(&st, r); err != nil {
		return st, fmt.Errorf("read blob %s: %w", h, err)
	}
	st.finish()
	return st, nil
}

// converted is a blob made from a snapshot file: in the repository
// already (stored), or spooled at offset.
type converted struct {
	hash   plumbing.Hash
	size   int64
	stored bool
	offset int64
	spool  bool // written to the spool by spoolLF
	// unspooled: the spool, full, did not keep it.
	unspooled bool
}

// spoolLF writes the content of e with CRLF turned into LF (size bytes) at
// the end of the spool, and hashes it. Content the repository already
// holds is not kept in the spool.
func (n *normalizer) spoolLF(e *snapEntry, size int64) (converted, error) {
	s := n.snap
	r, err := s.raw(n.repo, e)
	if err != nil {
		return converted{}, err
	}
	defer r.Close()
	h := plumbing.NewHasher(plumbing.BlobObject, size)
	var w io.Writer = io.Discard
	fits := s.fits(size)
	if fits {
		w = io.NewOffsetWriter(s.spool, s.spoolEnd)
	}
	written, err := io.Copy(io.MultiWriter(h, w), newCRLFToLF(r))
	if err == nil && written != size {
		err = fmt.Errorf("converted to %d bytes, expected %d", written, size)
	}
	if err != nil {
		_ = s.spool.Truncate(s.spoolEnd)
		return converted{}, fmt.Errorf("spool %s: %w", e.raw, err)
	}
	c := converted{hash: h.Sum(), size: size, offset: s.spoolEnd}
	if n.repo.Storer.HasEncodedObject(c.hash) == nil {
		c.stored = true
		if fits {
			if err := s.spool.Truncate(s.spoolEnd); err != nil {
				return converted{}, fmt.Errorf("spool: %w", err)
			}
		}
		return c, nil
	}
	if !fits {
		c.unspooled = true
		return c, nil
	}
	c.spool = true
	s.spoolEnd += size
	return c, nil
}

// dropSpooled gives back the spool space of c when it was the last thing
// written there.
func (s *snapshot) dropSpooled(c converted) {
	if c.spool && c.offset+c.size == s.spoolEnd && s.spool.Truncate(c.offset) == nil {
		s.spoolEnd = c.offset
	}
}
