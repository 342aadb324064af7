package gitops

import (
	"bufio"
	"compress/zlib"
	"context"
	"crypto/sha1"
	"encoding/binary"
	"encoding/hex"
	"fmt"
	"hash/crc32"
	"io"
	"os"
	"path/filepath"

	"github.com/go-git/go-git/v5/plumbing"
	"github.com/go-git/go-git/v5/plumbing/format/idxfile"
)

// objectSource is where writePack reads the objects it packs.
type objectSource interface {
	EncodedObject(plumbing.ObjectType, plumbing.Hash) (plumbing.EncodedObject, error)
}

// writePack copies the objects named by hashes from src into a new pack,
// with its index, in the object store objDir. Each object is stored whole
// (no deltas): as it is stored in one of reuse's packs when it is stored
// whole there, else inflated from src and compressed for speed. The index
// is built as the pack is written, so nothing is read back. This is what a
// local clone needs instead of asking git-upload-pack for a pack and
// indexing it, and how a commit stores its new objects.
//
// As git does, the pack and its index are written under temporary names
// and renamed into place, the index first: a reader never sees a partial
// pack, and on any failure (cancelled ctx included) the temporary files
// are removed, leaving the object store as it was. With durable, both are
// synced to disk before they are renamed, as git does, so that a crash
// never leaves a branch pointing into a truncated pack; a throw-away clone
// does without.
func writePack(ctx context.Context, objDir string, src objectSource, reuse *sourcePacks, hashes []plumbing.Hash, durable bool) (err error) {
	dir := filepath.Join(objDir, "pack")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	f, err := os.CreateTemp(dir, "tmp_pack_")
	if err != nil {
		return err
	}
	defer func() {
		if err != nil {
			f.Close()
			os.Remove(f.Name())
		}
	}()
	pw := &packStream{buf: bufio.NewWriterSize(f, 256<<10), sum: sha1.New()}
	var head [12]byte
	copy(head[:], "PACK")
	binary.BigEndian.PutUint32(head[4:], 2)
	binary.BigEndian.PutUint32(head[8:], uint32(len(hashes)))
	pw.Write(head[:])
	var idx idxfile.Writer
	if err := idx.OnHeader(uint32(len(hashes))); err != nil {
		return err
	}
	zw, _ := zlib.NewWriterLevel(nil, zlib.BestSpeed)
	for _, h := range hashes {
		if err := ctx.Err(); err != nil {
			return err
		}
		pos := pw.off
		crc, ok, err := reuse.copyWhole(pw, h)
		if err == nil && !ok {
			pos, crc, err = pw.object(zw, src, h)
		}
		if err != nil {
			return fmt.Errorf("object %s: %w", h, err)
		}
		idx.Add(h, uint64(pos), crc)
	}
	var sum plumbing.Hash
	copy(sum[:], pw.sum.Sum(nil))
	if _, err := pw.buf.Write(sum[:]); err != nil {
		return err
	}
	if err := pw.buf.Flush(); err != nil {
		return err
	}
	if pw.err != nil {
		return pw.err
	}
	if durable {
		if err := f.Sync(); err != nil {
			return err
		}
	}
	if err := f.Close(); err != nil {
		return err
	}
	if err := idx.OnFooter(sum); err != nil {
		return err
	}
	mi, err := idx.Index()
	if err != nil {
		return err
	}
	base := filepath.Join(dir, "pack-"+hex.EncodeToString(sum[:]))
	if _, err := os.Stat(base + ".pack"); err == nil {
		// The same objects are packed already (packs are named by
		// content): keep that pack, whose index is in place.
		os.Remove(f.Name())
		return nil
	}
	if err := writeIndexFile(dir, base+".idx", mi, durable); err != nil {
		return err
	}
	// The pack goes in place last: an index without its pack is ignored.
	if err := os.Chmod(f.Name(), 0o444); err != nil {
		return err
	}
	if err := os.Rename(f.Name(), base+".pack"); err != nil {
		os.Remove(base + ".idx")
		return err
	}
	return nil
}

// writeIndexFile writes the index to a temporary file of dir and renames
// it to path.
func writeIndexFile(dir, path string, mi *idxfile.MemoryIndex, durable bool) (err error) {
	f, err := os.CreateTemp(dir, "tmp_idx_")
	if err != nil {
		return err
	}
	defer func() {
		if err != nil {
			f.Close()
			os.Remove(f.Name())
		}
	}()
	bw := bufio.NewWriter(f)
	if _, err := idxfile.NewEncoder(bw).Encode(mi); err != nil {
		return err
	}
	if err := bw.Flush(); err != nil {
		return err
	}
	if err := f.Chmod(0o444); err != nil {
		return err
	}
	if durable {
		if err := f.Sync(); err != nil {
			return err
		}
	}
	if err := f.Close(); err != nil {
		return err
	}
	return os.Rename(f.Name(), path)
}

// packStream writes a pack: it counts the offset and hashes every byte.
type packStream struct {
	buf *bufio.Writer
	sum interface {
		io.Writer
		Sum([]byte) []byte
	}
	off int64
	crc uint32
	err error
}

func (p *packStream) Write(b []byte) (int, error) {
	if p.err != nil {
		return 0, p.err
	}
	n, err := p.buf.Write(b)
	p.sum.Write(b[:n])
	p.crc = crc32.Update(p.crc, crc32.IEEETable, b[:n])
	p.off += int64(n)
	p.err = err
	return n, err
}

// object appends the object h, whole, and returns its offset and the CRC
// of its entry.
func (p *packStream) object(zw *zlib.Writer, src objectSource, h plumbing.Hash) (int64, uint32, error) {
	obj, err := src.EncodedObject(plumbing.AnyObject, h)
	if err != nil {
		return 0, 0, err
	}
	pos := p.off
	p.crc = 0
	// The entry's header: type and size, seven bits at a time after the
	// first four.
	size := obj.Size()
	var hdr [16]byte
	c := byte(obj.Type())<<4 | byte(size&0x0f)
	size >>= 4
	n := 0
	for size > 0 {
		hdr[n] = c | 0x80
		n++
		c = byte(size & 0x7f)
		size >>= 7
	}
	hdr[n] = c
	n++
	p.Write(hdr[:n])
	r, err := obj.Reader()
	if err != nil {
		return 0, 0, err
	}
	zw.Reset(p)
	copied, err := io.Copy(zw, r)
	r.Close()
	if err == nil && copied != obj.Size() {
		err = fmt.Errorf("read %d bytes of %d", copied, obj.Size())
	}
	if err == nil {
		err = zw.Close()
	}
	if err == nil {
		err = p.err
	}
	return pos, p.crc, err
}
