package sandboxtest

import (
	"archive/tar"
	"bytes"
	"context"
	"crypto/sha256"
	"errors"
	"fmt"
	"io"
	"slices"
	"strings"
	"testing"

	"github.com/runner-dev/runner/sandbox"
)

func testFiles(t *testing.T, tg Target) {
	ctx := context.Background()
	sb := tg.start(t, sandbox.Config{})

	t.Run("BinaryRoundTrip", func(t *testing.T) {
		data := make([]byte, 3*256+7)
		for i := range data {
			data[i] = byte(i * 7)
		}
		data = append(data, "\r\n\x00\xff\xfe"...)
		if err := sb.WriteFile(ctx, "bin/all-bytes", data, 0o600); err != nil {
			t.Fatalf("WriteFile: %v", err)
		}
		got, err := sb.ReadFile(ctx, "/workspace/bin/all-bytes")
		if err != nil || !bytes.Equal(got, data) {
			t.Fatalf("ReadFile = %d bytes, %v; want the %d bytes written", len(got), err, len(data))
		}
		if err := sb.WriteFile(ctx, "bin/empty", nil, 0); err != nil {
			t.Fatalf("WriteFile of nothing: %v", err)
		}
		if got, err := sb.ReadFile(ctx, "bin/empty"); err != nil || len(got) != 0 {
			t.Errorf("ReadFile of an empty file = %q, %v", got, err)
		}
		files, err := sb.ListFiles(ctx, "bin", false)
		if err != nil {
			t.Fatalf("ListFiles: %v", err)
		}
		want := []sandbox.FileInfo{{Path: "bin/all-bytes", Size: int64(len(data))}, {Path: "bin/empty"}}
		if !slices.Equal(files, want) {
			t.Errorf("ListFiles = %+v, want %+v", files, want)
		}
	})

	t.Run("SymlinksOutRefused", func(t *testing.T) {
		if err := sb.WriteFile(ctx, "in/target.txt", []byte("inside\n"), 0); err != nil {
			t.Fatal(err)
		}
		for _, l := range [][2]string{
			{"target.txt", "in/link-in"}, {"/etc/passwd", "in/link-out"}, {"/etc", "in/link-dir-out"},
			{"../../etc/passwd", "in/link-up"}, {"/workspace/in/target.txt", "in/link-abs-in"},
		} {
			tg.symlink(t, sb, l[0], l[1])
		}
		for _, p := range []string{"in/link-in", "in/link-abs-in"} {
			if got, err := sb.ReadFile(ctx, p); err != nil || string(got) != "inside\n" {
				t.Errorf("ReadFile(%s) = %q, %v; want the file it leads to inside", p, got, err)
			}
		}
		for _, p := range []string{"in/link-out", "in/link-dir-out/passwd", "in/link-up", "../etc/passwd", "/etc/passwd"} {
			got, err := sb.ReadFile(ctx, p)
			if !errors.Is(err, sandbox.ErrOutsideWorkspace) {
				t.Errorf("ReadFile(%s) = %.40q, %v; want ErrOutsideWorkspace", p, got, err)
			}
			if err := sb.WriteFile(ctx, p, []byte("x"), 0); !errors.Is(err, sandbox.ErrOutsideWorkspace) {
				t.Errorf("WriteFile(%s) = %v; want ErrOutsideWorkspace", p, err)
			}
		}
		if _, err := sb.ListFiles(ctx, "in/link-dir-out", false); !errors.Is(err, sandbox.ErrOutsideWorkspace) {
			t.Errorf("ListFiles through a symlink out = %v; want ErrOutsideWorkspace", err)
		}
	})

	// The errors the agent's tools classify.
	t.Run("Errors", func(t *testing.T) {
		if err := sb.WriteFile(ctx, "e/file", []byte("f"), 0); err != nil {
			t.Fatal(err)
		}
		big := bytes.Repeat([]byte("x"), sandbox.MaxReadSize+1)
		if err := sb.WriteFile(ctx, "e/big", big, 0); err != nil {
			t.Fatalf("WriteFile of %d bytes: %v", len(big), err)
		}
		tests := []struct {
			name string
			err  error
			want error
		}{
			{"read a missing file", readErr(sb, "e/missing"), sandbox.ErrNotFound},
			{"read a directory", readErr(sb, "e"), sandbox.ErrIsDir},
			{"read under a file", readErr(sb, "e/file/x"), sandbox.ErrNotFound},
			{"read a file over MaxReadSize", readErr(sb, "e/big"), sandbox.ErrTooLarge},
			{"write over a directory", sb.WriteFile(ctx, "e", []byte("x"), 0), sandbox.ErrIsDir},
			{"write under a file", sb.WriteFile(ctx, "e/file/x", []byte("x"), 0), sandbox.ErrNotDir},
			{"list a missing directory", listErr(sb, "e/missing"), sandbox.ErrNotFound},
		}
		for _, tt := range tests {
			if !errors.Is(tt.err, tt.want) {
				t.Errorf("%s: %v, want %v", tt.name, tt.err, tt.want)
			}
		}
	})
}

func readErr(sb sandbox.Sandbox, p string) error {
	_, err := sb.ReadFile(context.Background(), p)
	return err
}

func listErr(sb sandbox.Sandbox, p string) error {
	_, err := sb.ListFiles(context.Background(), p, false)
	return err
}

// The snapshot holds exactly what was written, as the sandbox user's, in
// the layout gitops reads; two snapshots are the same; nothing runs after.
func testSnapshot(t *testing.T, tg Target) {
	ctx := context.Background()
	sb := tg.start(t, sandbox.Config{})
	files := map[string]string{"README.md": "hello\n", "src/a.go": "package a\n", "src/deep/b.bin": "\x00\xff\x01"}
	for p, body := range files {
		if err := sb.WriteFile(ctx, p, []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	if err := sb.WriteFile(ctx, "run.sh", []byte("#!/bin/sh\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	tg.symlink(t, sb, "src/a.go", "link")
	first := snapshot(t, sb)
	want := strings.Join([]string{
		`./ 5 755 1000:1000 ""`,
		`./README.md 0 644 1000:1000 "hello\n"`,
		`./link 2 777 1000:1000 "src/a.go"`,
		`./run.sh 0 755 1000:1000 "#!/bin/sh\n"`,
		`./src/ 5 755 1000:1000 ""`,
		`./src/a.go 0 644 1000:1000 "package a\n"`,
		`./src/deep/ 5 755 1000:1000 ""`,
		`./src/deep/b.bin 0 644 1000:1000 "\x00\xff\x01"`,
	}, "\n")
	if first != want {
		t.Errorf("snapshot:\n%s\nwant:\n%s", first, want)
	}
	if second := snapshot(t, sb); second != first {
		t.Errorf("a second snapshot differs:\n%s\nfirst:\n%s", second, first)
	}
	if _, err := sb.Exec(ctx, "true", sandbox.ExecOptions{}); !errors.Is(err, sandbox.ErrStopped) {
		t.Errorf("Exec after Snapshot: %v, want ErrStopped", err)
	}
	if err := sb.WriteFile(ctx, "late", []byte("x"), 0); !errors.Is(err, sandbox.ErrStopped) {
		t.Errorf("WriteFile after Snapshot: %v, want ErrStopped", err)
	}
}

// A file and a directory the agent made unreadable, even to itself, are in
// the snapshot with their content: the agent cannot make the snapshot, and
// so the whole task's work, fail.
func testSnapshotUnreadable(t *testing.T, tg Target) {
	sb := tg.start(t, sandbox.Config{})
	output(t, sb, "mkdir locked && echo kept-work >locked/f && echo more >shut && chmod 000 shut locked/f locked")
	got := snapshot(t, sb)
	for _, want := range []string{"./locked/f ", `"kept-work\n"`, "./shut ", `"more\n"`} {
		if !strings.Contains(got, want) {
			t.Errorf("snapshot lacks %s:\n%s", want, got)
		}
	}
}

// snapshot is DescribeSnapshot.
func snapshot(t *testing.T, sb sandbox.Sandbox) string { return DescribeSnapshot(t, sb) }

// DescribeSnapshot takes sb's snapshot and describes its entries, one a
// line, sorted: name, type flag, permission bits, owner, and the link
// target (symlinks, hard links) or the content (quoted up to 64 bytes,
// else its size and a hash).
func DescribeSnapshot(t testing.TB, sb sandbox.Sandbox) string {
	t.Helper()
	rc, err := sb.Snapshot(context.Background())
	if err != nil {
		t.Fatalf("Snapshot: %v", err)
	}
	defer rc.Close()
	var entries []string
	tr := tar.NewReader(rc)
	for {
		h, err := tr.Next()
		if err == io.EOF {
			break
		}
		if err != nil {
			t.Fatalf("read the snapshot: %v", err)
		}
		body, _ := io.ReadAll(tr)
		what := fmt.Sprintf("%q", body)
		switch {
		case h.Typeflag == tar.TypeSymlink, h.Typeflag == tar.TypeLink:
			what = fmt.Sprintf("%q", h.Linkname)
		case len(body) > 64:
			what = fmt.Sprintf("%d bytes %x", len(body), sha256.Sum256(body))
		}
		entries = append(entries, fmt.Sprintf("%s %c %o %d:%d %s", h.Name, h.Typeflag, h.Mode&0o7777, h.Uid, h.Gid, what))
	}
	slices.Sort(entries)
	return strings.Join(entries, "\n")
}

// Close is idempotent, works with a cancelled context, and ends every call.
func testLifecycle(t *testing.T, tg Target) {
	sb := tg.start(t, sandbox.Config{})
	if err := sb.WriteFile(context.Background(), "f", []byte("x"), 0); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	for i := range 2 {
		if err := sb.Close(ctx); err != nil {
			t.Errorf("Close #%d: %v", i+1, err)
		}
	}
	if _, err := sb.ReadFile(context.Background(), "f"); !errors.Is(err, sandbox.ErrClosed) {
		t.Errorf("ReadFile after Close: %v, want ErrClosed", err)
	}
	if _, err := sb.Exec(context.Background(), "true", sandbox.ExecOptions{}); !errors.Is(err, sandbox.ErrClosed) {
		t.Errorf("Exec after Close: %v, want ErrClosed", err)
	}
}
