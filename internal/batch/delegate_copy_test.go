package batch

import (
	"archive/tar"
	"bytes"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

type tarEntry struct {
	name, link, body string
	typ              byte
	mode             int64
	size             int64 // when set, the header claims it and no content follows
}

func hostileTar(t *testing.T, entries ...tarEntry) *bytes.Buffer {
	t.Helper()
	var buf bytes.Buffer
	tw := tar.NewWriter(&buf)
	for _, e := range entries {
		h := &tar.Header{Name: e.name, Linkname: e.link, Typeflag: e.typ, Mode: e.mode, Size: int64(len(e.body))}
		if h.Typeflag == 0 {
			h.Typeflag = tar.TypeReg
		}
		if h.Typeflag != tar.TypeReg {
			h.Size = 0
		}
		if e.size > 0 {
			h.Size = e.size
			if err := tw.WriteHeader(h); err != nil {
				t.Fatal(err)
			}
			return &buf // the claimed content never comes
		}
		if err := tw.WriteHeader(h); err != nil {
			t.Fatal(err)
		}
		tw.Write([]byte(e.body))
	}
	tw.Close()
	return &buf
}

// The copy of a workspace is the sandbox's output: names that leave the
// workspace and oversized contents are refused; .git (any spelling),
// devices and links other than symlinks are left out; and writing it on
// the host makes no symlink and nothing outside its directory.
func TestReadWorkspaceRefusesHostileTars(t *testing.T) {
	for _, tc := range []struct {
		name    string
		entries []tarEntry
		want    string
	}{
		{"parent", []tarEntry{{name: "../evil", body: "x"}}, "leaves the workspace"},
		{"nested parent", []tarEntry{{name: "./a/../../evil", body: "x"}}, "leaves the workspace"},
		{"absolute", []tarEntry{{name: "/etc/cron.d/x", body: "x"}}, "leaves the workspace"},
		{"huge", []tarEntry{{name: "big", size: maxCopyBytes + 1}}, "more than 32 MiB"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := readWorkspace(hostileTar(t, tc.entries...))
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("error %v, want %q", err, tc.want)
			}
		})
	}

	c, err := readWorkspace(hostileTar(t,
		tarEntry{name: "./", typ: tar.TypeDir},
		tarEntry{name: "./.git/config", body: "[core]\n\thooksPath = /tmp\n"},
		tarEntry{name: "./.GIT./hooks/pre-commit", body: "evil", mode: 0o755},
		tarEntry{name: "./sub/.git/HEAD", body: "ref"},
		tarEntry{name: "./dev", typ: tar.TypeChar},
		tarEntry{name: "./hard", typ: tar.TypeLink, link: "/etc/shadow"},
		tarEntry{name: "./l", typ: tar.TypeSymlink, link: "/etc"},
		tarEntry{name: "./l/passwd", body: "root::0:0"},
		tarEntry{name: "./run.sh", body: "#!/bin/sh\n", mode: 0o4777},
		tarEntry{name: "./x", body: "first"},
		tarEntry{name: "./x", typ: tar.TypeSymlink, link: "../../outside"},
	))
	if err != nil {
		t.Fatal(err)
	}
	files := slices.Sorted(func(yield func(string) bool) {
		for k := range c.files {
			if !yield(k) {
				return
			}
		}
	})
	if want := []string{"l/passwd", "run.sh"}; !slices.Equal(files, want) {
		t.Errorf("files = %q, want %q", files, want)
	}
	if c.files["run.sh"].mode != 0o755 {
		t.Errorf("run.sh mode = %o, want 755 (no setuid, as git keeps it)", c.files["run.sh"].mode)
	}
	if c.links["x"] != "../../outside" || c.links["l"] != "/etc" || len(c.links) != 2 {
		t.Errorf("links = %q", c.links)
	}
	if len(c.skipped) != 2 {
		t.Errorf("skipped = %q, want the device and the hard link", c.skipped)
	}

	parent := t.TempDir()
	dir := filepath.Join(parent, "ws")
	if err := os.Mkdir(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := c.writeFiles(dir); err != nil {
		t.Fatal(err)
	}
	var found []string
	filepath.WalkDir(parent, func(p string, d os.DirEntry, err error) error {
		if d.Type()&os.ModeSymlink != 0 {
			t.Errorf("a symlink was made on the host: %s", p)
		}
		if !d.IsDir() {
			rel, _ := filepath.Rel(parent, p)
			found = append(found, filepath.ToSlash(rel))
		}
		return nil
	})
	if want := []string{"ws/l/passwd", "ws/run.sh"}; !slices.Equal(found, want) {
		t.Errorf("written on the host: %q, want %q", found, want)
	}
}

// The patch of an isolated sub-agent holds whole files added, changed
// (content or mode) and removed; symlink changes are named, not carried.
func TestDiffCopies(t *testing.T) {
	base := &workspaceCopy{files: map[string]copiedFile{
		"same": {data: []byte("s\n"), mode: 0o644}, "edit": {data: []byte("a\nb\n"), mode: 0o644},
		"gone": {data: []byte("g"), mode: 0o644}, "chmod": {data: []byte("c"), mode: 0o644},
	}, links: map[string]string{"l": "same"}}
	now := &workspaceCopy{files: map[string]copiedFile{
		"same": {data: []byte("s\n"), mode: 0o644}, "edit": {data: []byte("a\nB\n"), mode: 0o644},
		"new": {data: []byte{0, 1}, mode: 0o644}, "chmod": {data: []byte("c"), mode: 0o755},
	}, links: map[string]string{"l": "edit"}}
	p := diffCopies(base, now)
	var got []string
	for _, c := range p.Changes {
		got = append(got, c.Path+map[bool]string{true: " removed", false: ""}[c.Delete])
	}
	if want := []string{"chmod", "edit", "new", "gone removed"}; !slices.Equal(got, want) {
		t.Errorf("changes = %q, want %q", got, want)
	}
	for _, want := range []string{"changed edit", "-b", "+B", "added new", "(binary content not shown)", "removed gone", "mode of chmod: 644 -> 755"} {
		if !strings.Contains(p.Diff, want) {
			t.Errorf("diff lacks %q:\n%s", want, p.Diff)
		}
	}
	if len(p.Skipped) != 1 || !strings.Contains(p.Skipped[0], "l (a symlink)") {
		t.Errorf("skipped = %q", p.Skipped)
	}
}
