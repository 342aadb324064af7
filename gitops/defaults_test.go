package gitops

import (
	"archive/tar"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/go-git/go-git/v5/plumbing"
)

// streamTar returns a tar stream that fill writes as it is read, so that a
// large snapshot never sits in memory. Closing the reader ends fill.
func streamTar(fill func(tw *tar.Writer) error) io.ReadCloser {
	pr, pw := io.Pipe()
	go func() {
		tw := tar.NewWriter(pw)
		err := fill(tw)
		if err == nil {
			err = tw.Close()
		}
		pw.CloseWithError(err)
	}()
	return pr
}

// zeros is an endless reader of zero bytes.
type zeros struct{}

func (zeros) Read(p []byte) (int, error) { clear(p); return len(p), nil }

// The default cap on one file is the README's and SECURITY.md's 100 MiB: a
// snapshot holding a file of exactly 100 MiB is taken (it equals the base,
// so nothing is written), one byte more and the snapshot is refused, naming
// the file. CommitOptions leave the cap unset.
func TestCommitTreeDefaultFileSizeCap(t *testing.T) {
	const limit = 100 << 20 // as the documentation says, not the constant
	dir := filepath.Join(t.TempDir(), "repo")
	gitRun(t, t.TempDir(), "init", "-q", dir)
	f, err := os.Create(filepath.Join(dir, "big"))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := io.CopyN(f, zeros{}, limit); err != nil {
		t.Fatal(err)
	}
	f.Close()
	gitRun(t, dir, "add", "big")
	gitRun(t, dir, "commit", "-q", "-m", "base")
	base := gitRun(t, dir, "rev-parse", "HEAD")
	snapshot := func(size int64) io.ReadCloser {
		return streamTar(func(tw *tar.Writer) error {
			if err := tw.WriteHeader(&tar.Header{Name: "./", Typeflag: tar.TypeDir, Mode: 0o755}); err != nil {
				return err
			}
			if err := tw.WriteHeader(&tar.Header{Name: "./big", Typeflag: tar.TypeReg, Mode: 0o644, Size: size}); err != nil {
				return err
			}
			_, err := io.CopyN(tw, zeros{}, size)
			return err
		})
	}
	ctx := context.Background()
	at := snapshot(limit)
	res, err := CommitTree(ctx, dir, plumbing.NewHash(base), at, CommitOptions{Branch: "at-limit"})
	at.Close()
	if err != nil || !res.NoChanges {
		t.Fatalf("a file of exactly %d bytes: %+v, %v; want it taken (no changes from the base)", limit, res, err)
	}
	over := snapshot(limit + 1)
	_, err = CommitTree(ctx, dir, plumbing.NewHash(base), over, CommitOptions{Branch: "over-limit"})
	over.Close()
	var unsafe *UnsafeSnapshotError
	if !errors.As(err, &unsafe) || !strings.Contains(err.Error(), "big") || !strings.Contains(err.Error(), fmt.Sprint(limit)) {
		t.Errorf("a file of %d bytes: %v; want the snapshot refused, naming the file and the %d-byte limit", limit+1, err, limit)
	}
	if refs := gitRun(t, dir, "for-each-ref", "--format=%(refname)"); refs != "refs/heads/main" && refs != "refs/heads/master" {
		t.Errorf("branches after the two snapshots: %s", refs)
	}
}

// The default cap on entries is the documentation's 200,000: a snapshot of
// exactly 200,000 tar entries is taken, one entry more is refused. The
// entries are the root and empty directories, which git does not record,
// so that the snapshot taken costs no object.
func TestCommitTreeDefaultEntryCap(t *testing.T) {
	const limit = 200_000 // as the documentation says, not the constant
	dir, base := newRepo(t, nil)
	snapshot := func(entries int) io.Reader { return &dirEntries{n: entries} }
	ctx := context.Background()
	res, err := CommitTree(ctx, dir, base, snapshot(limit), CommitOptions{Branch: "at-limit"})
	if err != nil || !res.NoChanges {
		t.Fatalf("a snapshot of exactly %d entries: %+v, %v; want it taken (empty directories: no changes)", limit, res, err)
	}
	_, err = CommitTree(ctx, dir, base, snapshot(limit+1), CommitOptions{Branch: "over-limit"})
	var unsafe *UnsafeSnapshotError
	if !errors.As(err, &unsafe) || !strings.Contains(err.Error(), fmt.Sprintf("more than %d entries", limit)) {
		t.Errorf("a snapshot of %d entries: %v; want it refused for more than %d entries", limit+1, err, limit)
	}
}

// dirEntries is a tar stream of n entries, the root ("./") and n-1 empty
// directories, made by patching the name and checksum of one header: the
// tar package takes far longer to write 200,000 headers.
type dirEntries struct {
	n, next int
	block   [512]byte
	pending []byte
}

func (d *dirEntries) Read(p []byte) (int, error) {
	if len(d.pending) == 0 {
		switch {
		case d.next < d.n:
			d.header(d.next)
			d.pending = d.block[:]
		case d.next == d.n:
			d.pending = make([]byte, 1024) // the end of the archive
		default:
			return 0, io.EOF
		}
		d.next++
	}
	k := copy(p, d.pending)
	d.pending = d.pending[k:]
	return k, nil
}

// header fills the block with entry i: "./" first, then "./d000001/"...
func (d *dirEntries) header(i int) {
	b := &d.block
	clear(b[:])
	name := "./"
	if i > 0 {
		name = fmt.Sprintf("./d%06d/", i)
	}
	copy(b[0:], name)
	copy(b[100:], "0000755\x00")     // mode
	copy(b[108:], "0000000\x00")     // uid
	copy(b[116:], "0000000\x00")     // gid
	copy(b[124:], "00000000000\x00") // size
	copy(b[136:], "00000000000\x00") // mtime
	b[156] = tar.TypeDir
	copy(b[257:], "ustar\x0000")
	copy(b[148:], "        ")
	sum := 0
	for _, c := range b {
		sum += int(c)
	}
	copy(b[148:], fmt.Sprintf("%06o\x00 ", sum))
}
