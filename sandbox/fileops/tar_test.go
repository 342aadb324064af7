package fileops

import (
	"archive/tar"
	"bytes"
	"errors"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

// writeCounter records a stream and how many writes carried it.
type writeCounter struct {
	bytes.Buffer
	writes int
}

func (w *writeCounter) Write(p []byte) (int, error) {
	w.writes++
	return w.Buffer.Write(p)
}

// The workspace tar holds every file, link and directory with its content,
// mode and whole-second time, owned by the sandbox user, with no PAX record
// unless a name needs one, and reaches the engine in large writes.
func TestWorkspaceTar(t *testing.T) {
	dir := t.TempDir()
	long := strings.Repeat("d", 60) + "/" + strings.Repeat("e", 60) + "/long.txt"
	big := bytes.Repeat([]byte("0123456789abcdef"), 8<<10) // 128 KiB, over the copy buffer
	files := []struct {
		name    string
		content []byte
		mode    fs.FileMode
	}{
		{"a.txt", []byte("hello\n"), 0o644},
		{"empty", nil, 0o600},
		{"big.bin", append(big, 'x'), 0o644},
		{"sub/dir/run.sh", []byte("#!/bin/sh\n"), 0o755},
		{long, []byte("deep\n"), 0o644},
	}
	when := time.Date(2024, 5, 6, 7, 8, 9, 123456789, time.UTC)
	for _, f := range files {
		p := filepath.Join(dir, filepath.FromSlash(f.name))
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, f.content, f.mode); err != nil {
			t.Fatal(err)
		}
		if err := os.Chmod(p, f.mode); err != nil {
			t.Fatal(err)
		}
		if err := os.Chtimes(p, when, when); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.Symlink("a.txt", filepath.Join(dir, "link")); err != nil {
		t.Fatal(err)
	}
	if err := syscall.Mkfifo(filepath.Join(dir, "fifo"), 0o644); err != nil {
		t.Fatal(err)
	}

	var out writeCounter
	if err := WriteWorkspaceTar(&out, dir, 1000, 1001, TarLayout{Root: "workspace", Home: "home/sandbox"}); err != nil {
		t.Fatal(err)
	}
	if max := out.Len()/TarBuffer + 1; out.writes > max {
		t.Errorf("stream of %d bytes in %d writes, want at most %d", out.Len(), out.writes, max)
	}

	got := map[string]*tar.Header{}
	content := map[string][]byte{}
	tr := tar.NewReader(&out.Buffer)
	for {
		hdr, err := tr.Next()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		b, err := io.ReadAll(tr)
		if err != nil {
			t.Fatal(err)
		}
		got[hdr.Name], content[hdr.Name] = hdr, b
		if hdr.Uid != 1000 || hdr.Gid != 1001 {
			t.Errorf("%s: owner %d:%d, want 1000:1001", hdr.Name, hdr.Uid, hdr.Gid)
		}
		if hdr.ModTime.Nanosecond() != 0 {
			t.Errorf("%s: time %s, want whole seconds", hdr.Name, hdr.ModTime)
		}
		if len(hdr.Name) <= 100 && len(hdr.PAXRecords) > 0 {
			t.Errorf("%s: PAX records %v, want none for a short name", hdr.Name, hdr.PAXRecords)
		}
	}
	for _, f := range files {
		name := "workspace/" + f.name
		hdr, ok := got[name]
		switch {
		case !ok:
			t.Errorf("%s: missing", name)
		case !bytes.Equal(content[name], f.content):
			t.Errorf("%s: got %d bytes, want %d", name, len(content[name]), len(f.content))
		case fs.FileMode(hdr.Mode).Perm() != f.mode:
			t.Errorf("%s: mode %o, want %o", name, hdr.Mode, f.mode)
		case !hdr.ModTime.Equal(when.Truncate(time.Second)):
			t.Errorf("%s: time %s, want %s", name, hdr.ModTime, when.Truncate(time.Second))
		}
	}
	if hdr, ok := got["workspace/link"]; !ok || hdr.Typeflag != tar.TypeSymlink || hdr.Linkname != "a.txt" {
		t.Errorf("link: got %+v, want a symlink to a.txt", hdr)
	}
	for _, name := range []string{"workspace/", "workspace/sub/dir/", "home/sandbox/"} {
		if hdr, ok := got[name]; !ok || hdr.Typeflag != tar.TypeDir {
			t.Errorf("%s: got %+v, want a directory", name, hdr)
		}
	}
	if _, ok := got["workspace/fifo"]; ok {
		t.Error("fifo: copied, want skipped")
	}
}
