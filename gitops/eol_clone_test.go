package gitops

import (
	"context"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

// newRawRepo is newRepo storing every file byte for byte, whatever the
// fixture's .gitattributes say: a repository whose blobs were committed
// with other settings, or before the attributes existed.
func newRawRepo(t *testing.T, files map[string]file) string {
	t.Helper()
	dir := filepath.Join(t.TempDir(), "repo")
	gitRun(t, t.TempDir(), "init", "-q", dir)
	writeFiles(t, dir, files)
	info := filepath.Join(dir, ".git", "info", "attributes")
	if err := os.WriteFile(info, []byte("* -text !eol !crlf -ident !filter !working-tree-encoding\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	gitRun(t, dir, "add", "-A", "-f")
	gitRun(t, dir, "commit", "-q", "--allow-empty", "-m", "base")
	if err := os.Remove(info); err != nil {
		t.Fatal(err)
	}
	return dir
}

// checkoutAttributes covers every line-ending action a checkout applies,
// with content that each rule treats differently.
const checkoutAttributes = "* text=auto\n" +
	"*.bat eol=crlf\n" +
	"*.crlf text eol=crlf\n" +
	"*.lf text eol=lf\n" +
	"*.png binary\n" +
	"*.notext -text\n" +
	"*.autocrlf text=auto eol=crlf\n" +
	"*.legacy crlf\n" +
	"[attr]winfile text eol=crlf\n" +
	"*.mac winfile\n" +
	"*.lfs filter=lfs diff=lfs merge=lfs -text\n" +
	"docs/*.txt eol=crlf\n" +
	"\"name with space.q\" eol=crlf\n"

func checkoutFixture() map[string]file {
	big := strings.Repeat("line of text\n", inlineBlob/13+100)
	return map[string]file{
		".gitattributes":            {content: checkoutAttributes},
		"a.txt":                     {content: "a\nb\n"},
		"stored-crlf.txt":           {content: "a\r\nb\r\n"},
		"run.bat":                   {content: "@echo off\nexit\n"},
		"mixed.bat":                 {content: "@echo off\r\nexit\n"},
		"mixed.crlf":                {content: "a\r\nb\nc"},
		"stored.crlf":               {content: "a\r\nb\r\n"},
		"lonecr.crlf":               {content: "a\rb\n"},
		"endcr.crlf":                {content: "a\nb\r"},
		"noeol.crlf":                {content: "a\nb"},
		"empty.crlf":                {content: ""},
		"exec.crlf":                 {content: "#!/bin/sh\necho hi\n", mode: 0o755},
		"link.crlf":                 {link: "a.txt"},
		"x.lf":                      {content: "a\r\nb\n"},
		"img.png":                   {content: "\x89PNG\r\n\x1a\n\x00\x00\nIEND\n"},
		"x.notext":                  {content: "a\nb\n"},
		"y.autocrlf":                {content: "a\nb\n"},
		"bin.autocrlf":              {content: "a\n\x00b\n"},
		"lonecr.autocrlf":           {content: "a\rb\n"},
		"ctrlz.autocrlf":            {content: "a\nb\n\x1a"},
		"nonprint.autocrlf":         {content: "\x01\x02\x03\n"},
		"l.legacy":                  {content: "a\nb\n"},
		"w.mac":                     {content: "a\nb\n"},
		"p.lfs":                     {content: "version https://git-lfs.github.com/spec/v1\noid sha256:0000\nsize 12\n"},
		"docs/readme.txt":           {content: "docs\n"},
		"other/docs/readme.txt":     {content: "other\n"},
		"sub/.gitattributes":        {content: "*.txt text eol=crlf\n[attr]winfile -text\n"},
		"sub/b.txt":                 {content: "x\ny\n"},
		"sub/w.mac":                 {content: "x\ny\n"},
		"sub/deeper/.gitattributes": {content: "*.txt -text\n"},
		"sub/deeper/c.txt":          {content: "x\n"},
		"sub/deeper/d.md":           {content: "m\r\n"},
		"ünï/ファイル.bat":              {content: "a\n"},
		"name with space.q":         {content: "a\n"},
		"big.crlf":                  {content: big},
		"big.autocrlf":              {content: big},
		"bigbin.autocrlf":           {content: big + "\x00"},
		"big.txt":                   {content: big},
	}
}

// TestCloneAppliesAttributesLikeGit: Clone's checkout writes the bytes
// `git clone` writes (default configuration: core.autocrlf=false,
// core.eol=lf) for text, text=auto, eol, -text, binary and macros, from
// .gitattributes at any depth, for blobs stored with LF, CRLF or both,
// small or streamed; and its index records the checked-out sizes, so that
// git finds the fresh clone clean.
func TestCloneAppliesAttributesLikeGit(t *testing.T) {
	src := newRawRepo(t, checkoutFixture())
	gitRun(t, src, "update-index", "--add", "--cacheinfo", "160000,"+gitRun(t, src, "rev-parse", "HEAD")+",vendor/sub")
	gitRun(t, src, "commit", "-q", "-m", "submodule")

	want := filepath.Join(t.TempDir(), "git")
	gitRun(t, t.TempDir(), "clone", "-q", src, want)
	// The fixture means something only if git converts some files.
	if b, _ := os.ReadFile(filepath.Join(want, "run.bat")); string(b) != "@echo off\r\nexit\r\n" {
		t.Fatalf("git clone wrote run.bat as %q: the fixture does not exercise eol=crlf", b)
	}
	for _, depth := range []int{0, 1} {
		got := filepath.Join(t.TempDir(), "runner")
		ws, err := Clone(context.Background(), CloneOptions{URL: src, Dir: got, Depth: depth})
		if err != nil {
			t.Fatalf("Clone depth %d: %v", depth, err)
		}
		if g, w := listTree(t, got), listTree(t, want); g != w {
			t.Errorf("depth %d: worktree differs from git clone's:\nrunner:\n%s\ngit:\n%s", depth, g, w)
		}
		if g, w := gitRun(t, got, "ls-files", "-s"), gitRun(t, want, "ls-files", "-s"); g != w {
			t.Errorf("depth %d: index differs from git clone's:\nrunner:\n%s\ngit:\n%s", depth, g, w)
		}
		for p, size := range indexSizes(t, got) {
			fi, err := os.Lstat(filepath.Join(got, p))
			if err != nil {
				t.Fatal(err)
			}
			if !fi.IsDir() && fi.Size() != size {
				t.Errorf("depth %d: index records %d bytes for %s, the file has %d", depth, size, p, fi.Size())
			}
		}
		if len(ws.Warnings) != 1 || !strings.Contains(ws.Warnings[0], "filter=lfs") || !strings.Contains(ws.Warnings[0], `"p.lfs"`) {
			t.Errorf("depth %d: warnings %q, want one naming filter=lfs and p.lfs", depth, ws.Warnings)
		}
	}
}

// indexSizes reads the size git's index records for each path.
func indexSizes(t *testing.T, dir string) map[string]int64 {
	t.Helper()
	out := gitRun(t, dir, "-c", "core.quotePath=false", "ls-files", "--debug")
	sizes := make(map[string]int64)
	var cur string
	for line := range strings.SplitSeq(out, "\n") {
		if !strings.HasPrefix(line, "  ") {
			cur = line
			continue
		}
		if rest, ok := strings.CutPrefix(strings.TrimSpace(line), "size: "); ok {
			n, err := strconv.ParseInt(strings.Fields(rest)[0], 10, 64)
			if err != nil {
				t.Fatal(err)
			}
			sizes[cur] = n
		}
	}
	return sizes
}

// TestCloneNotesUnsupportedAttributes: attributes that ask for more than
// line endings are not applied; the files hold what the repository
// stores, and the clone says which ones.
func TestCloneNotesUnsupportedAttributes(t *testing.T) {
	files := map[string]file{
		".gitattributes": {content: "*.enc working-tree-encoding=UTF-16LE\n*.id ident\n*.utf working-tree-encoding=utf-8\n*.crypt filter=git-crypt\n"},
		"a.enc":          {content: "abc\n"},
		"b.enc":          {content: "def\n"},
		"c.id":           {content: "$Id$\n"},
		"d.utf":          {content: "utf\n"},
		"e.crypt":        {content: "secret\n"},
	}
	for i := range 5 {
		files["m/"+strconv.Itoa(i)+".id"] = file{content: "$Id$\n"}
	}
	src := newRawRepo(t, files)
	dir := filepath.Join(t.TempDir(), "ws")
	ws, err := Clone(context.Background(), CloneOptions{URL: src, Dir: dir})
	if err != nil {
		t.Fatal(err)
	}
	for p, f := range files {
		if b, err := os.ReadFile(filepath.Join(dir, p)); err != nil || string(b) != f.content {
			t.Errorf("%s = %q, %v; want the stored %q", p, b, err, f.content)
		}
	}
	want := []string{
		`attribute "filter=git-crypt" is not applied (no filter driver is configured, as in git without one: LFS pointers stay pointers); 1 file checked out as stored: "e.crypt"`,
		`attribute "ident" is not applied ($Id$ is not expanded); 6 files checked out as stored: "c.id", "m/0.id", "m/1.id" and 3 more`,
		`attribute "working-tree-encoding=UTF-16LE" is not applied (content stays in the repository's encoding); 2 files checked out as stored: "a.enc", "b.enc"`,
	}
	if strings.Join(ws.Warnings, "\n") != strings.Join(want, "\n") {
		t.Errorf("warnings:\n%s\nwant:\n%s", strings.Join(ws.Warnings, "\n"), strings.Join(want, "\n"))
	}
}
