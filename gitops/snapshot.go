package gitops

import (
	"archive/tar"
	"bytes"
	"context"
	"errors"
	"fmt"
	"hash/maphash"
	"io"
	"os"
	"path"
	"slices"
	"strings"

	"github.com/go-git/go-git/v5/plumbing"
	"github.com/go-git/go-git/v5/plumbing/filemode"

	"github.com/runner-dev/runner/internal/policy"
)

// Defaults for CommitOptions.MaxFileSize and CommitOptions.MaxEntries.
const (
	DefaultMaxFileSize = 100 << 20
	DefaultMaxEntries  = 200_000
)

// ignoredEntriesFactor bounds the entries of ignored directories that a
// snapshot may hold, as a multiple of MaxEntries: they are dropped while
// read, but reading them still costs the host time and a few bytes each.
const ignoredEntriesFactor = 10

type entryKind uint8

const (
	kindDir entryKind = iota + 1
	kindFile
	kindSymlink
)

func (k entryKind) String() string {
	switch k {
	case kindDir:
		return "directory"
	case kindFile:
		return "file"
	default:
		return "symlink"
	}
}

// snapEntry is one file, symlink or directory of the snapshot. Content is
// not kept: a blob the repository lacks is spooled to a temporary file,
// from offset on, to be written once the snapshot is known to be safe.
type snapEntry struct {
	raw    string // the name as written in the stream, for error reports
	kind   entryKind
	mode   filemode.FileMode // Regular, Executable or Symlink; zero for directories
	hash   plumbing.Hash
	size   int64
	target string // symlink target
	stored bool   // the repository already holds the blob
	offset int64  // content position in the spool when !stored
	// unspooled: the repository lacks the blob and the spool, full, did
	// not keep it (see snapshotLimits.spool).
	unspooled bool
	cr        bool // the content holds a CR: attributes may convert it
}

// snapshot is the parsed tar stream, keyed by clean slash-separated path
// relative to the workspace root.
type snapshot struct {
	entries map[string]*snapEntry
	// ignore holds info/exclude and the snapshot's .gitignore files read
	// so far (every regular file named .gitignore outside an excluded
	// directory).
	ignore *ignoreRules
	// ignoreFiles maps a directory ("" for the root) to the content of the
	// .gitignore it holds, bounded as the rules are: for the rules without
	// the exclude list (see excludedPaths).
	ignoreFiles map[string][]byte
	// tracked are the paths of the base tree: never dropped as ignored.
	tracked map[string]treeEntry
	// dropped describes the entries left out while read (see dropIgnored).
	dropped droppedEntries
	// pending are the refusals of entries that only matter if the entry
	// is to be committed: decided once every .gitignore is known.
	pending    []pendingRefusal
	unsafe     *UnsafeSnapshotError
	spool      *os.File
	spoolEnd   int64
	spoolLimit int64 // spoolEnd never exceeds it
	// small holds the content of one small file at a time; copyBuf is the
	// buffer of every larger copy. Both are reused from entry to entry.
	small, copyBuf []byte

	// nestedGit lists the directories holding a ".git" of their own
	// (see noteDotGit).
	nestedGit map[string]bool
}

// smallBlob is the size up to which a file is read into memory and written
// to the spool only if the repository lacks it: most files of a snapshot
// are unchanged, and this spares each of them a write, a truncate and a seek
// of the spool, and a buffer.
const smallBlob = 64 << 10

type snapshotLimits struct {
	maxFileSize int64
	maxEntries  int
	// spool bounds the bytes the spool holds: content past it is hashed,
	// not kept, and its entry marked unspooled.
	spool int64
}

// pendingRefusal is an entry refused unless git add -A would leave it out
// as ignored and untracked.
type pendingRefusal struct {
	raw, name, reason string
}

// readSnapshot parses the tar stream in one pass. It refuses the whole
// stream with an *UnsafeSnapshotError listing every offending entry, and
// skips the agent's .git directories. known reports blobs the repository
// already holds; others are copied to spool. Nothing is written anywhere
// else.
//
// Output git add -A would leave out never refuses the snapshot: an
// untracked entry inside a directory the rules read so far exclude (ig,
// then the snapshot's .gitignore files as they come) is dropped unread and
// counts against ignoredEntriesFactor × MaxEntries instead of MaxEntries;
// a hard link, a device, a file over MaxFileSize elsewhere is refused
// only if, once every .gitignore is known, it is tracked or not ignored.
// What protects the host holds for every entry: names (absolute, "..",
// NUL), entries below a file or symlink, the bounds on entries and on the
// ignore rules.
func readSnapshot(ctx context.Context, r io.Reader, lim snapshotLimits, known func(plumbing.Hash) bool, spool *os.File, ig *ignoreRules, tracked map[string]treeEntry) (*snapshot, error) {
	s := &snapshot{
		entries:    make(map[string]*snapEntry),
		ignore:     ig,
		tracked:    tracked,
		spool:      spool,
		spoolLimit: lim.spool,
		unsafe:     &UnsafeSnapshotError{},
	}
	s.dropped.seed = maphash.MakeSeed()
	unsafe := s.unsafe
	maxIgnored := ignoredEntriesFactor * lim.maxEntries
	tr := tar.NewReader(ctxReader{ctx, r})
	for n := 0; ; {
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		hdr, err := tr.Next()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return nil, fmt.Errorf("read snapshot: %w", err)
		}
		name, reason := entryPath(hdr.Name)
		if reason == "" && name != "" && s.dropIgnored(hdr, name) {
			if s.dropped.count > maxIgnored {
				unsafe.add(hdr.Name, fmt.Sprintf("more than %d entries in ignored directories", maxIgnored))
				break
			}
			continue
		}
		if n++; n > lim.maxEntries {
			unsafe.add(hdr.Name, fmt.Sprintf("more than %d entries", lim.maxEntries))
			break
		}
		if reason != "" {
			unsafe.add(hdr.Name, reason)
			continue
		}
		if name == "" {
			if hdr.Typeflag != tar.TypeDir {
				unsafe.add(hdr.Name, "workspace root is not a directory")
			}
			continue
		}
		if inDotGit(name) {
			s.noteDotGit(name)
			continue
		}
		reason, soft, err := s.add(tr, hdr, name, lim, known, unsafe.Total == 0)
		if err != nil {
			return nil, fmt.Errorf("read snapshot entry %q: %w", hdr.Name, err)
		}
		switch {
		case reason == "":
		case soft:
			s.pending = append(s.pending, pendingRefusal{raw: hdr.Name, name: name, reason: reason})
			s.dropped.noteNonDir(name) // for checkParents
		default:
			unsafe.add(hdr.Name, reason)
		}
	}
	s.settlePending()
	s.checkDropped()
	s.checkParents(unsafe)
	if unsafe.Total > 0 {
		return nil, unsafe
	}
	return s, nil
}

// settlePending refuses the pending entries that git add -A would not
// leave out: tracked, or not ignored by the final rules.
func (s *snapshot) settlePending() {
	for _, p := range s.pending {
		if _, tracked := s.tracked[p.name]; tracked || !s.ignore.ignored(p.name) {
			s.unsafe.add(p.raw, p.reason)
		}
	}
	s.pending = nil
}

// ctxReader ends a read once ctx is done, so that skipping or copying a
// large entry stops with the task.
type ctxReader struct {
	ctx context.Context
	r   io.Reader
}

func (c ctxReader) Read(p []byte) (int, error) {
	if err := c.ctx.Err(); err != nil {
		return 0, err
	}
	return c.r.Read(p)
}

// add records one entry and returns why it is refused, if it is; soft
// means the refusal stands only if the entry is to be committed (see
// readSnapshot); err reports a stream or spool failure. Content is hashed
// and spooled only while the snapshot is still acceptable.
func (s *snapshot) add(tr *tar.Reader, hdr *tar.Header, name string, lim snapshotLimits, known func(plumbing.Hash) bool, readContent bool) (reason string, soft bool, err error) {
	reason, err = s.addEntry(tr, hdr, name, lim, known, readContent)
	switch hdr.Typeflag {
	case tar.TypeDir, tar.TypeSymlink:
		return reason, false, err
	}
	return reason, reason != "" && reason != "duplicate entry", err
}

func (s *snapshot) addEntry(tr *tar.Reader, hdr *tar.Header, name string, lim snapshotLimits, known func(plumbing.Hash) bool, readContent bool) (reason string, err error) {
	if _, dup := s.entries[name]; dup {
		return "duplicate entry", nil
	}
	e := &snapEntry{raw: hdr.Name}
	switch hdr.Typeflag {
	case tar.TypeDir:
		e.kind = kindDir
	case tar.TypeReg, tar.TypeGNUSparse:
		if hdr.Size > lim.maxFileSize {
			return fmt.Sprintf("file of %d bytes exceeds the %d-byte limit", hdr.Size, lim.maxFileSize), nil
		}
		e.kind, e.mode, e.size = kindFile, filemode.Regular, hdr.Size
		if hdr.Mode&0o100 != 0 {
			// Git's rule (core.fileMode): the owner's execute bit alone
			// decides between 100755 and 100644.
			e.mode = filemode.Executable
		}
		if readContent {
			if err := s.readBlob(tr, name, e, known); err != nil {
				return "", err
			}
		}
	case tar.TypeSymlink:
		if hdr.Linkname == "" {
			return "symlink without a target", nil
		}
		if isDotGitmodules(path.Base(name)) {
			return "symlinked .gitmodules", nil
		}
		e.kind, e.mode, e.target = kindSymlink, filemode.Symlink, hdr.Linkname
		e.size = int64(len(hdr.Linkname))
		e.hash = plumbing.ComputeHash(plumbing.BlobObject, []byte(hdr.Linkname))
		e.stored = known(e.hash)
	case tar.TypeLink:
		return fmt.Sprintf("hard link to %q", hdr.Linkname), nil
	case tar.TypeChar, tar.TypeBlock:
		return "device node", nil
	case tar.TypeFifo:
		return "named pipe", nil
	default:
		return fmt.Sprintf("unsupported entry type %q", hdr.Typeflag), nil
	}
	s.entries[name] = e
	return "", nil
}

// readBlob hashes the entry's content, keeps it in the spool unless the
// repository already has it, and keeps .gitignore files in memory.
func (s *snapshot) readBlob(r io.Reader, name string, e *snapEntry, known func(plumbing.Hash) bool) error {
	if e.size <= smallBlob {
		return s.readSmallBlob(r, name, e, known)
	}
	if s.copyBuf == nil {
		s.copyBuf = make([]byte, 32<<10)
	}
	h := plumbing.NewHasher(plumbing.BlobObject, e.size)
	cr := &crSeen{}
	fits := s.fits(e.size)
	dst := []io.Writer{h, cr}
	if fits {
		dst = append(dst, s.spool)
	}
	var ignore *bytes.Buffer
	if path.Base(name) == ".gitignore" {
		if e.size > maxIgnoreFileSize {
			s.unsafe.add(e.raw, fmt.Sprintf("ignore file of %d bytes exceeds the %d-byte limit", e.size, maxIgnoreFileSize))
		} else {
			ignore = &bytes.Buffer{}
			dst = append(dst, ignore)
		}
	}
	n, err := io.CopyBuffer(io.MultiWriter(dst...), r, s.copyBuf)
	if err == nil && n != e.size {
		err = io.ErrUnexpectedEOF
	}
	if err != nil {
		return fmt.Errorf("copy content: %w", err)
	}
	e.hash, e.cr = h.Sum(), cr.seen
	e.stored = known(e.hash)
	e.offset = s.spoolEnd
	switch {
	case !fits:
		e.unspooled = !e.stored
	case e.stored:
		// Only blobs the repository lacks need to be read back.
		if err := s.spool.Truncate(s.spoolEnd); err != nil {
			return fmt.Errorf("spool: %w", err)
		}
		if _, err := s.spool.Seek(s.spoolEnd, io.SeekStart); err != nil {
			return fmt.Errorf("spool: %w", err)
		}
	default:
		s.spoolEnd += e.size
	}
	if ignore != nil {
		s.keepIgnoreFile(e.raw, name, ignore.Bytes())
	}
	return nil
}

// readSmallBlob is readBlob for a file of at most smallBlob bytes.
func (s *snapshot) readSmallBlob(r io.Reader, name string, e *snapEntry, known func(plumbing.Hash) bool) error {
	if s.small == nil {
		s.small = make([]byte, smallBlob)
	}
	b := s.small[:e.size]
	if _, err := io.ReadFull(r, b); err != nil {
		if errors.Is(err, io.EOF) {
			err = io.ErrUnexpectedEOF
		}
		return fmt.Errorf("copy content: %w", err)
	}
	e.hash, e.cr = plumbing.ComputeHash(plumbing.BlobObject, b), bytes.IndexByte(b, '\r') >= 0
	e.stored = known(e.hash)
	e.offset = s.spoolEnd
	e.unspooled = !e.stored && !s.fits(e.size)
	if !e.stored && !e.unspooled {
		if _, err := s.spool.Write(b); err != nil {
			return fmt.Errorf("spool: %w", err)
		}
		s.spoolEnd += e.size
	}
	if path.Base(name) == ".gitignore" {
		s.keepIgnoreFile(e.raw, name, b)
	}
	return nil
}

// fits reports whether n more bytes fit in the spool.
func (s *snapshot) fits(n int64) bool {
	return s.spoolLimit <= 0 || s.spoolEnd+n <= s.spoolLimit
}

// keepIgnoreFile adds the rules of the .gitignore file at name; a file
// crossing the bounds on ignore rules refuses the snapshot.
func (s *snapshot) keepIgnoreFile(raw, name string, content []byte) {
	dir := path.Dir(name)
	if dir == "." {
		dir = ""
	}
	if err := s.ignore.addFile(dir, content); err != nil {
		s.unsafe.add(raw, err.Error())
		return
	}
	if s.ignoreFiles == nil {
		s.ignoreFiles = make(map[string][]byte)
	}
	s.ignoreFiles[dir] = bytes.Clone(content) // content may be a buffer reused for the next entry
}

// content returns a reader over a spooled blob.
func (s *snapshot) content(e *snapEntry) io.Reader {
	if e.kind == kindSymlink {
		return strings.NewReader(e.target)
	}
	return io.NewSectionReader(s.spool, e.offset, e.size)
}

// checkParents refuses entries whose parent is a file or a symlink: no
// checkout can hold them, and extracting them would write through a link.
func (s *snapshot) checkParents(unsafe *UnsafeSnapshotError) {
	var bad []string
	reasons := make(map[string]string)
	for p, e := range s.entries {
		for dir := path.Dir(p); dir != "."; dir = path.Dir(dir) {
			if parent, ok := s.entries[dir]; ok && parent.kind != kindDir {
				bad = append(bad, e.raw)
				reasons[e.raw] = fmt.Sprintf("inside %s %q", parent.kind, dir)
				break
			}
		}
		if _, ok := reasons[e.raw]; !ok {
			if why := s.keptEntryShape(p, e); why != "" {
				bad = append(bad, e.raw)
				reasons[e.raw] = why
			}
		}
	}
	slices.Sort(bad)
	for _, raw := range bad {
		unsafe.add(raw, reasons[raw])
	}
}

// entryPath cleans a tar entry name ("./src/a.go", "src/a.go", "./src/")
// into "src/a.go" or "src", and "" for the root. A non-empty reason means
// the name is refused.
func entryPath(name string) (clean, reason string) {
	p := strings.TrimPrefix(name, "./")
	if name == "." || p == "" {
		return "", ""
	}
	if strings.HasPrefix(p, "/") {
		return "", "absolute path"
	}
	if strings.IndexByte(p, 0) >= 0 {
		return "", "NUL byte in name"
	}
	p = strings.TrimSuffix(p, "/")
	for comp := range strings.SplitSeq(p, "/") {
		switch comp {
		case "..":
			return "", "parent directory component"
		case "", ".":
			return "", "non-canonical path"
		}
	}
	return p, ""
}

// inDotGit reports whether any component of p names a git directory.
func inDotGit(p string) bool {
	for comp := range strings.SplitSeq(p, "/") {
		if isDotGit(comp) {
			return true
		}
	}
	return false
}

// isDotGit reports whether a path component would be taken for ".git" by
// git on any file system: any letter case, trailing dots or spaces and
// NTFS stream suffixes (Windows), the 8.3 short name "git~1", ignorable
// Unicode code points (macOS). Git itself refuses such paths, and fsck
// flags them, so they are never imported. Backslash counts as a separator,
// as it does for git's own check.
func isDotGit(comp string) bool {
	for part := range strings.SplitSeq(comp, "\\") {
		n := strings.ToLower(strings.Map(policy.DropHFSIgnorable, part))
		if i := strings.IndexByte(n, ':'); i >= 0 {
			n = n[:i]
		}
		n = strings.TrimRight(n, ". ")
		if n == ".git" || n == "git~1" {
			return true
		}
	}
	return false
}

// isDotGitmodules is isDotGit for ".gitmodules", whose 8.3 name is
// "gitmod~1".
func isDotGitmodules(comp string) bool {
	n := strings.ToLower(strings.Map(policy.DropHFSIgnorable, comp))
	n = strings.TrimRight(n, ". ")
	return n == ".gitmodules" || n == "gitmod~1"
}
