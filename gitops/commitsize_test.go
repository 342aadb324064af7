package gitops

import (
	"bytes"
	"context"
	"errors"
	"io"
	"math/rand/v2"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"

	"github.com/go-git/go-git/v5/plumbing"
)

// randomBody returns n bytes that do not compress, so that sizes on disk
// say what was written.
func randomBody(seed uint64, n int) string {
	r := rand.New(rand.NewPCG(seed, seed))
	b := make([]byte, n)
	for i := range b {
		b[i] = byte(r.Uint32())
	}
	return string(b)
}

// newObjectFiles lists the object store files that are in after but not
// in before.
func newObjectFiles(before, after []string) []string {
	old := make(map[string]bool, len(before))
	for _, f := range before {
		old[f] = true
	}
	var out []string
	for _, f := range after {
		if !old[f] {
			out = append(out, f)
		}
	}
	return out
}

// A commit stores its new objects as one pack with its index, never as
// loose objects; git reads the pack as valid (verify-pack, fsck --strict)
// and finds the files' content in it. Regression test: the commit wrote one
// loose object per new blob and tree.
func TestCommitTreeWritesOnePack(t *testing.T) {
	repo, base := newRepo(t, map[string]file{"README": {content: "hello\n"}, "src/old.go": {content: "package old\n"}})
	before := objectFiles(t, repo)
	looseBefore := gitRun(t, repo, "count-objects")
	snap := tarOf(t,
		entry{name: "./", typeflag: '5', mode: 0o755},
		entry{name: "./README", body: "hello\n"},
		entry{name: "./src/", typeflag: '5', mode: 0o755},
		entry{name: "./src/old.go", body: "package old\n\nfunc F() {}\n"},
		entry{name: "./data/", typeflag: '5', mode: 0o755},
		entry{name: "./data/a.bin", body: randomBody(1, 300<<10)},
		entry{name: "./data/b.bin", body: randomBody(2, 200<<10)},
		entry{name: "./data/same-as-a.bin", body: randomBody(1, 300<<10)},
		entry{name: "./run.sh", mode: 0o755, body: "#!/bin/sh\n"},
		entry{name: "./link", typeflag: '2', link: "README"},
	)
	res, err := CommitTree(t.Context(), repo, base, bytes.NewReader(snap), CommitOptions{Branch: "agent/pack"})
	if err != nil {
		t.Fatal(err)
	}
	added := newObjectFiles(before, objectFiles(t, repo))
	var packs, idxs []string
	for _, f := range added {
		switch {
		case strings.HasPrefix(f, "/pack/pack-") && strings.HasSuffix(f, ".pack"):
			packs = append(packs, f)
		case strings.HasPrefix(f, "/pack/pack-") && strings.HasSuffix(f, ".idx"):
			idxs = append(idxs, f)
		default:
			t.Errorf("commit wrote %s: want only one pack and its index", f)
		}
	}
	if len(packs) != 1 || len(idxs) != 1 || strings.TrimSuffix(packs[0], ".pack") != strings.TrimSuffix(idxs[0], ".idx") {
		t.Fatalf("new files %v: want one pack with its index", added)
	}
	if got := gitRun(t, repo, "count-objects"); got != looseBefore {
		t.Errorf("git count-objects: %q after the commit, %q before: want no new loose objects", got, looseBefore)
	}
	idx := filepath.Join(repo, ".git", "objects", idxs[0])
	verify := gitRun(t, repo, "verify-pack", "-v", idx)
	// commit, 3 trees (root, src, data), blobs: old.go, a.bin, b.bin, run.sh
	// ("link" points at README, whose blob... is "README" the text, new).
	wantObjects := 1 + 3 + 5
	if n := strings.Count(verify, "\n") + 1; !strings.Contains(verify, ": ok") || n < wantObjects {
		t.Errorf("git verify-pack -v:\n%s\nwant %d objects and ok", verify, wantObjects)
	}
	for _, kind := range []string{" commit ", " tree ", " blob "} {
		if !strings.Contains(verify, kind) {
			t.Errorf("git verify-pack -v lists no%sobject:\n%s", kind, verify)
		}
	}
	fsckStrict(t, repo)
	if got := gitRun(t, repo, "rev-parse", "agent/pack"); got != res.Hash.String() {
		t.Errorf("branch at %s, want %s", got, res.Hash)
	}
	if got := gitRun(t, repo, "show", "agent/pack:data/b.bin"); got != strings.TrimRight(randomBody(2, 200<<10), "\n") {
		t.Errorf("git show agent/pack:data/b.bin: %d bytes, not the file's", len(got))
	}
}

// Over MaxCommitSize the snapshot is refused as a whole: the error names
// the largest new files with their sizes, nothing is written to the object
// store, no branch is made. Content the repository already holds does not
// count. Regression test: there was no cap.
func TestCommitTreeRefusesNewContentOverLimit(t *testing.T) {
	existing := randomBody(7, 600<<10)
	repo, base := newRepo(t, map[string]file{"old.bin": {content: existing}})
	before := objectFiles(t, repo)
	state := stateOf(t, repo)
	snap := tarOf(t,
		entry{name: "./old.bin", body: existing},
		entry{name: "./copy-of-old.bin", body: existing}, // already stored: free
		entry{name: "./big.bin", body: randomBody(1, 700<<10)},
		entry{name: "./bigger.bin", body: randomBody(2, 800<<10)},
		entry{name: "./small.txt", body: "small\n"},
	)
	_, err := CommitTree(t.Context(), repo, base, bytes.NewReader(snap), CommitOptions{Branch: "agent/big", MaxCommitSize: 1 << 20})
	var sizeErr *CommitSizeError
	if !errors.Is(err, ErrCommitTooLarge) || !errors.As(err, &sizeErr) {
		t.Fatalf("CommitTree: %v, want a *CommitSizeError", err)
	}
	if want := int64(700<<10 + 800<<10 + len("small\n")); sizeErr.Total != want || sizeErr.Limit != 1<<20 || sizeErr.Ignored {
		t.Errorf("error %+v, want total %d, limit %d", sizeErr, want, 1<<20)
	}
	if len(sizeErr.Largest) < 2 || sizeErr.Largest[0] != (SizedFile{"bigger.bin", 800 << 10}) || sizeErr.Largest[1] != (SizedFile{"big.bin", 700 << 10}) {
		t.Errorf("largest files %v, want bigger.bin then big.bin", sizeErr.Largest)
	}
	for _, want := range []string{`"bigger.bin" (800.0 KiB)`, `"big.bin" (700.0 KiB)`, "1.5 MiB", "1.0 MiB limit", "limits.commit_size"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error %q does not say %q", err, want)
		}
	}
	if strings.Contains(err.Error(), "copy-of-old.bin") {
		t.Errorf("error %q names content the repository already holds", err)
	}
	if after := objectFiles(t, repo); !sameLines(after, before) {
		t.Errorf("object store changed: new files %v", newObjectFiles(before, after))
	}
	if branchExists(repo, "agent/big") {
		t.Error("branch made")
	}
	assertStateUnchanged(t, repo, state)

	// The same snapshot under a cap it fits.
	if _, err := CommitTree(t.Context(), repo, base, bytes.NewReader(snap), CommitOptions{Branch: "agent/big", MaxCommitSize: 2 << 20}); err != nil {
		t.Fatalf("under a 2 MiB cap: %v", err)
	}
	fsckStrict(t, repo)
}

func sameLines(a, b []string) bool {
	return strings.Join(a, "\n") == strings.Join(b, "\n")
}

// spoolWatcher is a snapshot stream that measures the spool, through
// /proc/self/fd, every time the commit reads from it.
type spoolWatcher struct {
	t       *testing.T
	r       io.Reader
	tmp     string
	maxSize int64
	onRead  func(n int)
	reads   int
}

func (w *spoolWatcher) Read(p []byte) (int, error) {
	w.reads++
	if w.onRead != nil {
		w.onRead(w.reads)
	}
	for _, f := range openSpools(w.t, w.tmp) {
		if fi, err := os.Stat(f); err == nil {
			w.maxSize = max(w.maxSize, fi.Size())
		}
	}
	return w.r.Read(p)
}

// openSpools lists the /proc/self/fd entries of this process open on a
// file of dir (unlinked or not).
func openSpools(t *testing.T, dir string) []string {
	t.Helper()
	fds, err := os.ReadDir("/proc/self/fd")
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, fd := range fds {
		p := filepath.Join("/proc/self/fd", fd.Name())
		if target, err := os.Readlink(p); err == nil && strings.HasPrefix(target, dir+string(filepath.Separator)) {
			out = append(out, p)
		}
	}
	return out
}

func needProcFS(t *testing.T) {
	if runtime.GOOS != "linux" {
		t.Skip("watches the spool through /proc/self/fd")
	}
}

// The spool never holds more than MaxCommitSize, even when the workspace
// holds much more new content, ignored here: the commit of the real edit
// succeeds. Regression test: everything the repository lacked was spooled.
func TestCommitTreeSpoolBounded(t *testing.T) {
	needProcFS(t)
	tmp := t.TempDir()
	t.Setenv("TMPDIR", tmp)
	// Ignored by a file pattern, not a directory: such files are known
	// to be ignored only once every .gitignore is read, so they are read
	// (a directory already excluded would be dropped unread).
	repo, base := newRepo(t, map[string]file{".gitignore": {content: "*.o\n"}, "src/main.rs": {content: "fn main() {}\n"}})
	entries := []entry{
		{name: "./.gitignore", body: "*.o\n"},
		{name: "./src/main.rs", body: "fn main() { println!(\"hi\"); }\n"},
	}
	for i := range 8 {
		entries = append(entries, entry{name: "./obj" + string(rune('a'+i)) + ".o", body: randomBody(uint64(i), 256<<10)})
	}
	w := &spoolWatcher{t: t, r: bytes.NewReader(tarOf(t, entries...)), tmp: tmp}
	res, err := CommitTree(t.Context(), repo, base, w, CommitOptions{Branch: "agent/edit", MaxCommitSize: 512 << 10})
	if err != nil {
		t.Fatal(err)
	}
	if w.maxSize == 0 || w.maxSize > 512<<10 {
		t.Errorf("the spool reached %d bytes, want some and at most %d", w.maxSize, 512<<10)
	}
	if len(res.Changes) != 1 || res.Changes[0].Path != "src/main.rs" {
		t.Errorf("changes %v, want src/main.rs only", res.Changes)
	}
	fsckStrict(t, repo)

	// New content the commit keeps comes after ignored content that filled
	// the spool: refused, naming the ignored files too.
	entries = append(entries[:1], append(entries[2:], entry{name: "./src/main.rs", body: "fn main() { println!(\"late\"); }\n"})...)
	_, err = CommitTree(t.Context(), repo, base, bytes.NewReader(tarOf(t, entries...)), CommitOptions{Branch: "agent/late", MaxCommitSize: 512 << 10})
	var sizeErr *CommitSizeError
	if !errors.As(err, &sizeErr) || !sizeErr.Ignored || !strings.Contains(err.Error(), "including ignored ones not yet known") || !strings.Contains(err.Error(), ".o\"") {
		t.Errorf("edit after the spool filled: %v, want a CommitSizeError naming the ignored files", err)
	}
	if branchExists(repo, "agent/late") {
		t.Error("branch made")
	}
}

// The spool is removed and its space given back on every way out of
// CommitTree: success, a refused snapshot, new content over the cap, a
// cancellation while reading, a panic while reading. Regression test: a
// panic left the spool open, its space held.
func TestCommitTreeSpoolGoneOnEveryPath(t *testing.T) {
	needProcFS(t)
	tmp := t.TempDir()
	t.Setenv("TMPDIR", tmp)
	repo, base := newRepo(t, map[string]file{"a.txt": {content: "a\n"}})
	seed := uint64(0)
	big := func() []byte {
		seed += 2
		return tarOf(t, entry{name: "./a.txt", body: "b\n"}, entry{name: "./x.bin", body: randomBody(seed, 300<<10)}, entry{name: "./y.bin", body: randomBody(seed+1, 300<<10)})
	}
	tests := []struct {
		name    string
		snap    []byte
		opts    CommitOptions
		onRead  func(cancel context.CancelFunc, n int)
		wantErr bool
		panics  bool
	}{
		{name: "success", snap: big()},
		{name: "unsafe", snap: tarOf(t, entry{name: "./x.bin", body: randomBody(1, 300<<10)}, entry{name: "../escape", body: "x"}), wantErr: true},
		{name: "over the cap", snap: big(), opts: CommitOptions{MaxCommitSize: 400 << 10}, wantErr: true},
		{name: "cancelled", snap: big(), wantErr: true, onRead: func(cancel context.CancelFunc, n int) {
			if n == 20 {
				cancel()
			}
		}},
		{name: "panic", snap: big(), panics: true, onRead: func(_ context.CancelFunc, n int) {
			if n == 20 {
				panic("reader broke")
			}
		}},
	}
	for i, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ctx, cancel := context.WithCancel(t.Context())
			defer cancel()
			w := &spoolWatcher{t: t, r: bytes.NewReader(tt.snap), tmp: tmp}
			if tt.onRead != nil {
				w.onRead = func(n int) { tt.onRead(cancel, n) }
			}
			opts := tt.opts
			opts.Branch = "agent/path" + string(rune('a'+i))
			var err error
			panicked := func() (p bool) {
				defer func() { p = recover() != nil }()
				_, err = CommitTree(ctx, repo, base, w, opts)
				return false
			}()
			if panicked != tt.panics || (err != nil) != tt.wantErr {
				t.Errorf("panicked %v, error %v; want panic %v, error %v", panicked, err, tt.panics, tt.wantErr)
			}
			if w.maxSize == 0 {
				t.Errorf("the spool was never seen: the test does not watch it")
			}
			if left, err := os.ReadDir(tmp); err != nil || len(left) > 0 {
				t.Errorf("temporary directory holds %v (%v), want nothing", left, err)
			}
			if open := openSpools(t, tmp); len(open) > 0 {
				t.Errorf("still open on the temporary directory: %v", open)
			}
		})
	}
	fsckStrict(t, repo)
}

// A blob whose spooled content no longer hashes to its name fails the
// pack, which then leaves nothing in the object store.
func TestNewObjectsWriteLeavesNothingOnFailure(t *testing.T) {
	repo, _ := newRepo(t, map[string]file{"a": {content: "a\n"}})
	before := objectFiles(t, repo)
	r, err := openRepo(repo)
	if err != nil {
		t.Fatal(err)
	}
	objs := newNewObjects(r.Storer)
	good := []byte(randomBody(3, 100<<10))
	objs.addBlob(mustHash("0123456789012345678901234567890123456789"), int64(len(good)), func() io.Reader { return bytes.NewReader(good) })
	if err := objs.write(t.Context(), filepath.Join(repo, ".git")); err == nil || !strings.Contains(err.Error(), "content changed while spooled") {
		t.Fatalf("write: %v, want the content check to fail", err)
	}
	if after := objectFiles(t, repo); !sameLines(after, before) {
		t.Errorf("object store changed: new files %v", newObjectFiles(before, after))
	}
}

// A .gitattributes file the full spool did not keep cannot be read, so the
// commit is refused as over the cap, naming it.
func TestCommitTreeUnspooledAttributesRefused(t *testing.T) {
	repo, base := newRepo(t, map[string]file{".gitignore": {content: "*.bin\n"}})
	snap := tarOf(t,
		entry{name: "./.gitignore", body: "*.bin\n"},
		entry{name: "./out.bin", body: randomBody(4, 512<<10)}, // fills the spool
		entry{name: "./.gitattributes", body: "* text=auto\n"},
	)
	_, err := CommitTree(t.Context(), repo, base, bytes.NewReader(snap), CommitOptions{Branch: "agent/attrs", MaxCommitSize: 512 << 10})
	if !errors.Is(err, ErrCommitTooLarge) || !strings.Contains(err.Error(), ".gitattributes") {
		t.Errorf("CommitTree: %v, want ErrCommitTooLarge naming .gitattributes", err)
	}
}

// A cancelled write leaves nothing in the object store either.
func TestNewObjectsWriteCancelledLeavesNothing(t *testing.T) {
	repo, _ := newRepo(t, map[string]file{"a": {content: "a\n"}})
	before := objectFiles(t, repo)
	r, err := openRepo(repo)
	if err != nil {
		t.Fatal(err)
	}
	objs := newNewObjects(r.Storer)
	body := []byte("new content\n")
	h := plumbing.ComputeHash(plumbing.BlobObject, body)
	objs.addBlob(h, int64(len(body)), func() io.Reader { return bytes.NewReader(body) })
	ctx, cancel := context.WithCancel(t.Context())
	cancel()
	if err := objs.write(ctx, filepath.Join(repo, ".git")); !errors.Is(err, context.Canceled) {
		t.Fatalf("write: %v, want context.Canceled", err)
	}
	if after := objectFiles(t, repo); !sameLines(after, before) {
		t.Errorf("object store changed: new files %v", newObjectFiles(before, after))
	}
	if err := objs.write(t.Context(), filepath.Join(repo, ".git")); err != nil {
		t.Fatal(err)
	}
	if got := gitRun(t, repo, "cat-file", "-p", h.String()); got != "new content" {
		t.Errorf("git cat-file -p %s = %q", h, got)
	}
	fsckStrict(t, repo)
}
