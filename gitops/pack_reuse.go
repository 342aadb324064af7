package gitops

import (
	"bufio"
	"errors"
	"hash/crc32"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/go-git/go-git/v5/plumbing"
	"github.com/go-git/go-git/v5/plumbing/format/idxfile"
)

// sourcePacks reads entries of a repository's packs as they are stored, so
// that an object stored whole can be copied into a new pack without being
// inflated and compressed again, as git's pack-objects reuses them.
type sourcePacks struct {
	packs []*sourcePack
}

// maxReusedEntry bounds the entry copied through memory; a larger one is
// streamed the slow way.
const maxReusedEntry = 8 << 20

type sourcePack struct {
	f       *os.File
	idx     *idxfile.MemoryIndex
	offsets []int64 // of every entry, ascending, then where the entries end
}

// openSourcePacks opens the packs of the object store objDir that have an
// index. A pack that cannot be read is skipped: its objects are then
// copied the slow way.
func openSourcePacks(objDir string) *sourcePacks {
	sp := &sourcePacks{}
	idxs, _ := filepath.Glob(filepath.Join(objDir, "pack", "pack-*.idx"))
	for _, name := range idxs {
		if p, err := openSourcePack(strings.TrimSuffix(name, ".idx")); err == nil {
			sp.packs = append(sp.packs, p)
		}
	}
	return sp
}

func openSourcePack(base string) (*sourcePack, error) {
	raw, err := os.Open(base + ".idx")
	if err != nil {
		return nil, err
	}
	defer raw.Close()
	idx := idxfile.NewMemoryIndex()
	if err := idxfile.NewDecoder(bufio.NewReader(raw)).Decode(idx); err != nil {
		return nil, err
	}
	f, err := os.Open(base + ".pack")
	if err != nil {
		return nil, err
	}
	fi, err := f.Stat()
	if err != nil || fi.Size() < 32 {
		f.Close()
		return nil, errors.New("short pack")
	}
	p := &sourcePack{f: f, idx: idx}
	iter, err := idx.Entries()
	if err != nil {
		f.Close()
		return nil, err
	}
	for {
		e, err := iter.Next()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			f.Close()
			return nil, err
		}
		p.offsets = append(p.offsets, int64(e.Offset))
	}
	slices.Sort(p.offsets)
	p.offsets = append(p.offsets, fi.Size()-20) // the trailing checksum
	return p, nil
}

func (sp *sourcePacks) Close() {
	for _, p := range sp.packs {
		p.f.Close()
	}
}

// copyWhole writes the stored entry of h to w if a pack holds it whole
// (not as a delta) and its CRC checks out, and returns that CRC. ok is
// false, with nothing written, when it cannot.
func (sp *sourcePacks) copyWhole(w io.Writer, h plumbing.Hash) (crc uint32, ok bool, err error) {
	if sp == nil {
		return 0, false, nil
	}
	for _, p := range sp.packs {
		off, ferr := p.idx.FindOffset(h)
		if ferr != nil {
			continue
		}
		want, ferr := p.idx.FindCRC32(h)
		if ferr != nil {
			return 0, false, nil
		}
		i, found := slices.BinarySearch(p.offsets, off)
		if !found || i+1 >= len(p.offsets) || p.offsets[i+1]-off > maxReusedEntry {
			return 0, false, nil
		}
		entry := make([]byte, p.offsets[i+1]-off)
		if _, err := p.f.ReadAt(entry, off); err != nil {
			return 0, false, nil
		}
		// Bits 4-6 of the first byte: 6 and 7 are deltas.
		if t := entry[0] >> 4 & 7; t < 1 || t > 4 {
			return 0, false, nil
		}
		if crc32.ChecksumIEEE(entry) != want {
			return 0, false, nil
		}
		_, err := w.Write(entry)
		return want, true, err
	}
	return 0, false, nil
}
