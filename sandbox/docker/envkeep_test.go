package docker

import (
	"archive/tar"
	"bytes"
	"errors"
	"io"
	"slices"
	"strings"
	"testing"
)

// The setup's workspace tar is written by the repository's own commands:
// names that leave the workspace, devices, hard links to what is not
// kept and the .git directory never pass, and what passes is the sandbox
// user's.
func TestFilterKeptHostileTar(t *testing.T) {
	var in bytes.Buffer
	tw := tar.NewWriter(&in)
	add := func(h tar.Header, body string) {
		h.Size = int64(len(body))
		if h.Mode == 0 {
			h.Mode = 0o4755 // set-uid: must not survive
		}
		h.Uid = 0
		if err := tw.WriteHeader(&h); err != nil {
			t.Fatal(err)
		}
		io.WriteString(tw, body)
	}
	add(tar.Header{Typeflag: tar.TypeDir, Name: "workspace/"}, "")
	add(tar.Header{Typeflag: tar.TypeReg, Name: "workspace/README.md"}, "tracked")
	add(tar.Header{Typeflag: tar.TypeDir, Name: "workspace/node_modules/"}, "")
	add(tar.Header{Typeflag: tar.TypeReg, Name: "workspace/node_modules/a.js"}, "module")
	add(tar.Header{Typeflag: tar.TypeSymlink, Name: "workspace/node_modules/up", Linkname: "/etc/passwd"}, "")
	add(tar.Header{Typeflag: tar.TypeLink, Name: "workspace/node_modules/hard", Linkname: "workspace/node_modules/a.js"}, "")
	add(tar.Header{Typeflag: tar.TypeLink, Name: "workspace/node_modules/steal", Linkname: "workspace/README.md"}, "")
	add(tar.Header{Typeflag: tar.TypeChar, Name: "workspace/node_modules/mem", Devmajor: 1, Devminor: 1}, "")
	add(tar.Header{Typeflag: tar.TypeFifo, Name: "workspace/node_modules/fifo"}, "")
	add(tar.Header{Typeflag: tar.TypeReg, Name: "workspace/../etc/cron.d/x"}, "evil")
	add(tar.Header{Typeflag: tar.TypeReg, Name: "workspace/node_modules/../../etc/y"}, "evil")
	add(tar.Header{Typeflag: tar.TypeReg, Name: "/etc/z"}, "evil")
	add(tar.Header{Typeflag: tar.TypeReg, Name: "workspace/.git/hooks/pre-commit"}, "evil")
	add(tar.Header{Typeflag: tar.TypeReg, Name: "other/file"}, "evil")
	tw.Close()

	var asked []string
	keep := func(p string, dir bool) bool {
		asked = append(asked, p)
		return p == "node_modules" || p == ".git" || p == ".git/hooks/pre-commit"
	}
	var out bytes.Buffer
	if err := filterKept(tar.NewReader(&in), tar.NewWriter(&out), keep); err != nil {
		t.Fatal(err)
	}
	var got []string
	tr := tar.NewReader(&out)
	for {
		h, err := tr.Next()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		body, _ := io.ReadAll(tr)
		if h.Uid != 1000 || h.Gid != 1000 || h.Mode&^0o777 != 0 {
			t.Errorf("%s: uid %d gid %d mode %o; want the sandbox user's, no special bits", h.Name, h.Uid, h.Gid, h.Mode)
		}
		if strings.Contains(string(body), "evil") || strings.Contains(string(body), "tracked") {
			t.Errorf("%s carries %q", h.Name, body)
		}
		got = append(got, h.Name+" -> "+h.Linkname)
	}
	want := []string{
		"workspace/node_modules/ -> ",
		"workspace/node_modules/a.js -> ",
		"workspace/node_modules/up -> /etc/passwd",
		"workspace/node_modules/hard -> workspace/node_modules/a.js",
	}
	if !slices.Equal(got, want) {
		t.Errorf("kept:\n got %q\nwant %q", got, want)
	}
	if slices.ContainsFunc(asked, func(p string) bool { return strings.Contains(p, "..") || strings.HasPrefix(p, ".git") }) {
		t.Errorf("keep was asked about %q", asked)
	}
}
