package gitops

import (
	"context"
	"fmt"
	"io"
	"path/filepath"

	"github.com/go-git/go-git/v5/plumbing"
	"github.com/go-git/go-git/v5/plumbing/storer"
)

// objectSink is where trees and commits are stored: the repository, or
// the newObjects of a commit being built.
type objectSink interface {
	NewEncodedObject() plumbing.EncodedObject
	HasEncodedObject(plumbing.Hash) error
	SetEncodedObject(plumbing.EncodedObject) (plumbing.Hash, error)
}

// newObjects collects the objects a commit adds to a repository, so that
// they are written together as one pack (see write) instead of one loose
// file each: blobs stay in the snapshot's spool until then, trees and the
// commit in memory. Objects the repository already holds are not kept.
type newObjects struct {
	repo  storer.EncodedObjectStorer
	objs  map[plumbing.Hash]plumbing.EncodedObject
	order []plumbing.Hash
}

func newNewObjects(repo storer.EncodedObjectStorer) *newObjects {
	return &newObjects{repo: repo, objs: make(map[plumbing.Hash]plumbing.EncodedObject)}
}

func (n *newObjects) NewEncodedObject() plumbing.EncodedObject { return &plumbing.MemoryObject{} }

// HasEncodedObject reports whether the object is pending or in the
// repository.
func (n *newObjects) HasEncodedObject(h plumbing.Hash) error {
	if _, ok := n.objs[h]; ok {
		return nil
	}
	return n.repo.HasEncodedObject(h)
}

// SetEncodedObject adds obj to the pack to write.
func (n *newObjects) SetEncodedObject(obj plumbing.EncodedObject) (plumbing.Hash, error) {
	h := obj.Hash()
	if _, ok := n.objs[h]; !ok {
		n.objs[h] = obj
		n.order = append(n.order, h)
	}
	return h, nil
}

// EncodedObject returns a pending object, for writePack.
func (n *newObjects) EncodedObject(_ plumbing.ObjectType, h plumbing.Hash) (plumbing.EncodedObject, error) {
	if obj, ok := n.objs[h]; ok {
		return obj, nil
	}
	return nil, plumbing.ErrObjectNotFound
}

// addBlob adds a blob whose content, size bytes, is read from open when the
// pack is written, and must hash to h.
func (n *newObjects) addBlob(h plumbing.Hash, size int64, open func() io.Reader) {
	if _, ok := n.objs[h]; !ok {
		n.objs[h] = &spooledBlob{hash: h, size: size, open: open}
		n.order = append(n.order, h)
	}
}

// write stores the pending objects as one pack, with its index, in the
// object store of the repository whose common git directory is commonDir.
// The pack is written under a temporary name and renamed into place after
// its index, as git does: a reader sees the whole pack or none of it, and
// a failure leaves no file behind; both are synced to disk first. It
// writes nothing when nothing is pending.
func (n *newObjects) write(ctx context.Context, commonDir string) error {
	if len(n.order) == 0 {
		return nil
	}
	if err := writePack(ctx, filepath.Join(commonDir, "objects"), n, nil, n.order, true); err != nil {
		return fmt.Errorf("write pack: %w", err)
	}
	return nil
}

// spooledBlob is a blob whose content is read back from the spool as it is
// packed. Its Reader fails if the bytes no longer hash to the blob's name,
// so that a spool changed on disk never yields a corrupt object.
type spooledBlob struct {
	hash plumbing.Hash
	size int64
	open func() io.Reader
}

func (b *spooledBlob) Hash() plumbing.Hash             { return b.hash }
func (b *spooledBlob) Type() plumbing.ObjectType       { return plumbing.BlobObject }
func (b *spooledBlob) SetType(plumbing.ObjectType)     {}
func (b *spooledBlob) Size() int64                     { return b.size }
func (b *spooledBlob) SetSize(int64)                   {}
func (b *spooledBlob) Writer() (io.WriteCloser, error) { return nil, errReadOnlyBlob }

func (b *spooledBlob) Reader() (io.ReadCloser, error) {
	return io.NopCloser(&verifiedReader{
		r:    io.LimitReader(b.open(), b.size),
		h:    plumbing.NewHasher(plumbing.BlobObject, b.size),
		want: b.hash,
	}), nil
}

var errReadOnlyBlob = fmt.Errorf("spooled blob is read-only")

// verifiedReader hashes what it reads and fails at the end when the hash
// is not want.
type verifiedReader struct {
	r    io.Reader
	h    plumbing.Hasher
	want plumbing.Hash
}

func (v *verifiedReader) Read(p []byte) (int, error) {
	n, err := v.r.Read(p)
	v.h.Write(p[:n])
	if err == io.EOF {
		if got := v.h.Sum(); got != v.want {
			return n, fmt.Errorf("blob %s: content changed while spooled (now %s)", v.want, got)
		}
	}
	return n, err
}
