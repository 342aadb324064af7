package gitops

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// attrFixture is a tree of attribute files exercising git's parsing and
// matching rules: precedence (info/attributes over deeper over shallower
// files, later lines over earlier ones, later states over earlier ones),
// macros (built-in, user-defined, nested, refused below the root), quoting,
// anchoring, "**", a trailing '/', negative patterns, invalid names, long
// lines, a byte order mark and tabs.
var attrFixture = map[string]string{
	".gitattributes": "\xef\xbb\xbf*.bom text\n" +
		"# comment\n" +
		"   *.indent text\n" +
		"*.txt text\n" +
		"*.TXT -text\n" +
		"*.md text=auto eol=crlf\n" +
		"docs/*.md -text\n" +
		"/rootonly.c eol=lf\n" +
		"**/gen/** -text\n" +
		"dir/ eol=crlf\n" +
		"!*.neg text\n" +
		"*.inv text b@d\n" +
		"*.bad -text=foo\n" +
		"*.val text=foo\n" +
		"\"quoted name.q\" eol=crlf\n" +
		"\"oct\\101.q\" text\n" +
		"\"bad\\q.q\" text\n" +
		"[attr]crlfy text eol=crlf\n" +
		"[attr]nested-macro crlfy ident\n" +
		"*.c crlfy\n" +
		"*.h crlfy -text\n" +
		"*.m nested-macro\n" +
		"*.bin binary\n" +
		"*.unbin binary text\n" +
		"*.notbin -binary\n" +
		"*.ps1 text eol=crlf\n" +
		"*.ps1 !eol\n" +
		"*.lfs filter=lfs diff=lfs merge=lfs -text\n" +
		"*.enc working-tree-encoding=UTF-16LE\n" +
		"*.id ident\n" +
		"*.legacy crlf\n" +
		"*.legacyinput crlf=input\n" +
		"*.long text" + strings.Repeat(" ", 2100) + "\n" +
		"*.tab\ttext\teol=lf\r\n" +
		"*.nul text\x00 eol=crlf\n" +
		"*.[ch]pp eol=crlf\n" +
		"*.q?x text\n" +
		"*.unrelated linguist-generated diff=x\n",
	"sub/.gitattributes": "*.txt -text\n" +
		"[attr]crlfy -text\n" +
		"*.c !eol\n" +
		"/anch.txt eol=crlf\n" +
		"deep/*.md text\n",
	"sub/deeper/.gitattributes": "*.txt text eol=crlf\n*.c binary\n",
}

const attrFixtureInfo = "*.info text\nsecret/** -text\n[attr]crlfy eol=lf\n"

var attrFixturePaths = []string{
	"a.txt", "A.TXT", "x.md", "docs/x.md", "docs/sub/x.md", "rootonly.c", "sub/rootonly.c",
	"gen/x", "a/gen/y.txt", "dir/f", "x.neg", "x.inv", "x.bad", "x.val", "quoted name.q", "octA.q",
	"bad\\q.q", "x.c", "x.h", "x.m", "x.bin", "x.unbin", "x.notbin", "x.ps1", "x.lfs", "x.enc", "x.id",
	"x.legacy", "x.legacyinput", "x.long", "x.tab", "x.nul", "x.cpp", "x.hpp", "x.qax", "x.unrelated",
	"sub/a.txt", "sub/x.c", "sub/anch.txt", "sub/q/anch.txt", "anch.txt", "sub/deep/x.md",
	"sub/deeper/a.txt", "sub/deeper/x.c", "x.info", "secret/a.txt", "secret/b/c.md", "x.bom",
	"x.indent", "ünï/ファイル.txt", "name with space.txt", "noext",
}

// TestAttributesMatchGitCheckAttr compares every content attribute of
// many paths with `git check-attr`, reading the attribute files from the
// working tree (as `git add` does) and from the index (as a checkout
// does, which keeps a byte order mark).
func TestAttributesMatchGitCheckAttr(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "repo")
	gitRun(t, t.TempDir(), "init", "-q", dir)
	files := make(map[string]file)
	for p, c := range attrFixture {
		files[p] = file{content: c}
	}
	writeFiles(t, dir, files)
	if err := os.WriteFile(filepath.Join(dir, ".git", "info", "attributes"), []byte(attrFixtureInfo), 0o644); err != nil {
		t.Fatal(err)
	}
	gitRun(t, dir, "add", "-A")

	for _, tc := range []struct {
		name   string
		origin attrOrigin
		args   []string
	}{
		{"worktree", attrFromFile, nil},
		{"index", attrFromBlob, []string{"--cached"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			attrs, err := newGitAttributes([]byte(attrFixture[".gitattributes"]), tc.origin, []byte(attrFixtureInfo))
			if err != nil {
				t.Fatal(err)
			}
			for p, c := range attrFixture {
				if d := filepath.ToSlash(filepath.Dir(p)); d != "." {
					if err := attrs.addDir(d, []byte(c), tc.origin); err != nil {
						t.Fatal(err)
					}
				}
			}
			args := append([]string{"check-attr"}, tc.args...)
			args = append(args, append(contentAttrs[:], "--")...)
			args = append(args, attrFixturePaths...)
			out := gitRun(t, dir, append([]string{"-c", "core.quotePath=false"}, args...)...)
			want := make(map[string]string)
			for line := range strings.SplitSeq(out, "\n") {
				i := strings.LastIndex(line, ": ")
				j := strings.LastIndex(line[:i], ": ")
				p := line[:j]
				if strings.HasPrefix(p, `"`) {
					if unq, _, ok := unquoteC(p); ok {
						p = unq
					}
				}
				want[p+" "+line[j+2:i]] = line[i+2:]
			}
			for _, p := range attrFixturePaths {
				pa := attrs.lookup(p)
				got := map[string]attrValue{"text": pa.text, "crlf": pa.crlf, "eol": pa.eol, "ident": pa.ident, "filter": pa.filter, "working-tree-encoding": pa.encoding}
				for _, n := range contentAttrs {
					w, ok := want[p+" "+n]
					if !ok {
						t.Fatalf("git check-attr says nothing of %s %s:\n%s", p, n, out)
					}
					if g := got[n].String(); g != w {
						t.Errorf("%s: %s = %s, git says %s", p, n, g, w)
					}
				}
			}
		})
	}
}

// TestAttributesLimits: a tree with too many rules about content, or too
// many bytes of attribute files, is refused with the file named; rules
// about other attributes do not count.
func TestAttributesLimits(t *testing.T) {
	var many, unrelated strings.Builder
	for i := range maxAttrRules + 1 {
		fmt.Fprintf(&many, "*.x%d text\n", i)
		fmt.Fprintf(&unrelated, "*.x%d linguist-generated diff=foo\n", i)
	}
	if _, err := newGitAttributes([]byte(unrelated.String()), attrFromFile, nil); err != nil {
		t.Errorf("rules about other attributes: %v", err)
	}
	a, err := newGitAttributes([]byte("*.c text\n"), attrFromFile, nil)
	if err != nil {
		t.Fatal(err)
	}
	err = a.addDir("deep/er", []byte(many.String()), attrFromFile)
	if err == nil || !strings.Contains(err.Error(), "deep/er/.gitattributes") || !strings.Contains(err.Error(), "more than 1000") {
		t.Errorf("too many rules: %v, want an error naming deep/er/.gitattributes", err)
	}
	big := []byte("# " + strings.Repeat("x", maxAttrBytes) + "\n")
	if _, err := newGitAttributes(big, attrFromFile, nil); err == nil || !strings.Contains(err.Error(), "MiB") {
		t.Errorf("too many bytes: %v", err)
	}
}

// TestCommitTreeRefusesAttributeFlood: a workspace whose .gitattributes
// files would make every file's lookup expensive is refused before
// anything is written, with the file named; the user's repository is left
// as it was.
func TestCommitTreeRefusesAttributeFlood(t *testing.T) {
	repo, base := newRepo(t, map[string]file{"a.txt": {content: "a\n"}})
	before := objectFiles(t, repo)
	state := stateOf(t, repo)
	var flood strings.Builder
	for i := range maxAttrRules/2 + 1 {
		fmt.Fprintf(&flood, "*%d*%d*%d*[a-z]?x%d text\n", i, i, i, i)
	}
	snap := tarOf(t,
		entry{name: "./a.txt", body: "a\r\n"},
		entry{name: "./.gitattributes", body: flood.String()},
		entry{name: "./deep/.gitattributes", body: flood.String()},
	)
	_, err := CommitTree(context.Background(), repo, base, bytes.NewReader(snap), CommitOptions{Branch: "runner/flood"})
	if err == nil || !strings.Contains(err.Error(), "deep/.gitattributes") {
		t.Fatalf("CommitTree: %v, want a refusal naming deep/.gitattributes", err)
	}
	if branchExists(repo, "runner/flood") {
		t.Error("branch created")
	}
	if after := objectFiles(t, repo); !slices.Equal(after, before) {
		t.Errorf("objects written: before %v, after %v", before, after)
	}
	assertStateUnchanged(t, repo, state)
}
