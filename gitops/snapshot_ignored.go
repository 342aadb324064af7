package gitops

import (
	"archive/tar"
	"fmt"
	"hash/maphash"
	"path"
	"slices"
)

// droppedEntries remembers what readSnapshot left out unread, in a few
// bytes per entry: enough to keep refusing entries below a file or a
// symlink, and to check that every directory dropped as excluded is still
// excluded once all the .gitignore files are known.
type droppedEntries struct {
	count int
	seed  maphash.Seed
	// roots are the excluded directories whose entries were dropped, with
	// the number of files (entries other than directories) dropped below.
	roots map[string]int
	// names keeps the first maxDroppedNames file names dropped below each
	// root, for a root that is not wholly left out (see excludedPaths).
	names map[string][]string
	// nonDirs and dirs hold path hashes: of the files, symlinks and other
	// non-directories left out, and of every directory above an entry
	// left out.
	nonDirs, dirs map[uint64]bool
}

// maxDroppedNames caps the names droppedEntries keeps per root.
const maxDroppedNames = 64

// dropIgnored reports whether the entry is left out as git add -A would:
// untracked, inside a directory that the rules read so far exclude. It
// refuses, in s.unsafe, a dropped entry below a file or symlink.
func (s *snapshot) dropIgnored(hdr *tar.Header, name string) bool {
	if _, tracked := s.tracked[name]; tracked {
		return false
	}
	dir := path.Dir(name)
	if dir == "." {
		return false
	}
	root := s.ignore.excludedDir(dir)
	if root == "" {
		return false
	}
	d := &s.dropped
	if d.roots == nil {
		d.roots, d.nonDirs, d.dirs = make(map[string]int), make(map[uint64]bool), make(map[uint64]bool)
	}
	d.count++
	if hdr.Typeflag != tar.TypeDir {
		d.roots[root]++
		if d.names == nil {
			d.names = make(map[string][]string)
		}
		if len(d.names[root]) < maxDroppedNames {
			d.names[root] = append(d.names[root], name)
		}
	} else if _, ok := d.roots[root]; !ok {
		d.roots[root] = 0
	}
	var h maphash.Hash
	h.SetSeed(d.seed)
	for i, start := 0, 0; i < len(name); i++ {
		if name[i] != '/' {
			continue
		}
		h.WriteString(name[start:i])
		start = i
		x := h.Sum64()
		parent := name[:i]
		if e, ok := s.entries[parent]; ok && e.kind != kindDir {
			s.unsafe.add(hdr.Name, fmt.Sprintf("inside %s %q", e.kind, parent))
			return true
		}
		if d.nonDirs[x] {
			s.unsafe.add(hdr.Name, fmt.Sprintf("inside a file or symlink %q", parent))
			return true
		}
		d.dirs[x] = true
	}
	if hdr.Typeflag != tar.TypeDir {
		x := maphash.String(d.seed, name)
		if d.dirs[x] {
			s.unsafe.add(hdr.Name, "a file or symlink holding other entries")
		}
		d.nonDirs[x] = true
	}
	return true
}

// noteNonDir records a non-directory entry that is not kept (a pending
// refusal), so that entries below it are still refused.
func (d *droppedEntries) noteNonDir(name string) {
	if d.nonDirs == nil {
		d.roots, d.nonDirs, d.dirs = make(map[string]int), make(map[uint64]bool), make(map[uint64]bool)
	}
	d.nonDirs[maphash.String(d.seed, name)] = true
}

// checkDropped refuses the snapshot when a directory whose entries were
// dropped is no longer excluded by the final rules (a .gitignore that
// re-includes it came later in the stream): its content is gone.
func (s *snapshot) checkDropped() {
	roots := make([]string, 0, len(s.dropped.roots))
	for r := range s.dropped.roots {
		if !s.ignore.dirExcluded(r) {
			roots = append(roots, r)
		}
	}
	slices.Sort(roots)
	for _, r := range roots {
		s.unsafe.add(r+"/", "its entries were read as ignored, then a .gitignore later in the snapshot re-included it")
	}
}

// droppedParent returns the closest parent of p that is a non-directory
// left out of the snapshot, or "" for none.
func (d *droppedEntries) droppedParent(p string) string {
	if len(d.nonDirs) == 0 {
		return ""
	}
	var h maphash.Hash
	h.SetSeed(d.seed)
	found := ""
	for i, start := 0, 0; i < len(p); i++ {
		if p[i] != '/' {
			continue
		}
		h.WriteString(p[start:i])
		start = i
		if d.nonDirs[h.Sum64()] {
			found = p[:i]
		}
	}
	return found
}

// holdsDropped reports whether entries left out of the snapshot lie below p.
func (d *droppedEntries) holdsDropped(p string) bool {
	return len(d.dirs) > 0 && d.dirs[maphash.String(d.seed, p)]
}

// keptEntryShape says why a kept entry is refused because of entries left
// out: it lies below one of them that is not a directory, or it is not a
// directory and some lie below it.
func (s *snapshot) keptEntryShape(p string, e *snapEntry) string {
	if parent := s.dropped.droppedParent(p); parent != "" {
		return fmt.Sprintf("inside a file or symlink %q", parent)
	}
	if e.kind != kindDir && s.dropped.holdsDropped(p) {
		return fmt.Sprintf("%s holding ignored entries", e.kind)
	}
	return ""
}
