package gitops

import (
	"bytes"
	"fmt"
	"io"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/go-git/go-git/v5/plumbing"
)

// eolContent returns random content made of the bytes line-ending
// conversion looks at, so that CRLF, lone CR and LF, NUL, control bytes
// and a final ^Z all occur, with runs of printable text in between.
func eolContent(r *rand.Rand) []byte {
	alphabet := []string{"a", "b", " ", "\r", "\n", "\r\n", "\r\n", "\n", "\x00", "\x01", "\t", "\x1b", "\x7f", "\x1a", "é", strings.Repeat("x", 200)}
	n := r.IntN(40)
	var b bytes.Buffer
	for range n {
		b.WriteString(alphabet[r.IntN(len(alphabet))])
	}
	return b.Bytes()
}

// eolAttributes give each file extension one line-ending action.
const eolAttributes = "*.text text\n*.auto text=auto\n*.crlf text eol=crlf\n*.autocrlf text=auto eol=crlf\n" +
	"*.lf eol=lf\n*.autolf text=auto eol=lf\n*.bin -text\n*.input text=input\n*.legacy crlf\n*.none foo\n"

// TestLineEndingsMatchGit converts random content in both directions under
// every action and compares with git: `git hash-object --stdin-paths`
// stores files as `git add` does, `git cat-file --batch --filters` checks
// blobs out as a checkout does.
func TestLineEndingsMatchGit(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "repo")
	gitRun(t, t.TempDir(), "init", "-q", dir)
	writeFiles(t, dir, map[string]file{".gitattributes": {content: eolAttributes}})
	attrs, err := newGitAttributes([]byte(eolAttributes), attrFromFile, nil)
	if err != nil {
		t.Fatal(err)
	}
	exts := []string{"text", "auto", "crlf", "autocrlf", "lf", "autolf", "bin", "input", "legacy", "none"}
	r := rand.New(rand.NewPCG(7, 7))
	var names []string
	contents := make(map[string][]byte)
	for i := range 60 {
		c := eolContent(r)
		if i == 0 {
			c = nil
		}
		for _, ext := range exts {
			name := fmt.Sprintf("s%03d.%s", i, ext)
			names = append(names, name)
			contents[name] = c
			if err := os.WriteFile(filepath.Join(dir, name), c, 0o644); err != nil {
				t.Fatal(err)
			}
		}
	}

	// Into the repository.
	gitHashes := strings.Split(mustGitStdin(t, dir, strings.Join(names, "\n")+"\n", "hash-object", "--stdin-paths"), "\n")
	for i, name := range names {
		act := attrs.lookup(name).action()
		c := contents[name]
		st := statsOf(c)
		drop, err := act.dropsCR(&st, func() (bool, error) { return false, nil })
		if err != nil {
			t.Fatal(err)
		}
		stored := c
		if drop {
			stored, err = io.ReadAll(newCRLFToLF(bytes.NewReader(c)))
			if err != nil {
				t.Fatal(err)
			}
			if len(stored) != len(c)-int(st.crlf) {
				t.Errorf("%s: converted to %d bytes, stats said %d", name, len(stored), len(c)-int(st.crlf))
			}
		}
		if got := plumbing.ComputeHash(plumbing.BlobObject, stored).String(); got != gitHashes[i] {
			t.Errorf("%s (%q, action %d): stored as %s, git stores %s", name, c, act, got, gitHashes[i])
		}
	}

	// Out of the repository: a commit of the blobs as they are, checked
	// out by git clone.
	var index strings.Builder
	for _, name := range names {
		h := mustGitStdin(t, dir, string(contents[name]), "hash-object", "-w", "--no-filters", "--stdin")
		fmt.Fprintf(&index, "100644 %s\t%s\n", h, name)
	}
	mustGitStdin(t, dir, index.String(), "update-index", "--add", "--index-info")
	gitRun(t, dir, "add", ".gitattributes")
	gitRun(t, dir, "commit", "-q", "-m", "raw")
	clone := filepath.Join(t.TempDir(), "clone")
	gitRun(t, dir, "clone", "-q", dir, clone)
	for _, name := range names {
		want, err := os.ReadFile(filepath.Join(clone, name))
		if err != nil {
			t.Fatal(err)
		}
		act := attrs.lookup(name).action()
		got := toWorktree(contents[name], act)
		if !bytes.Equal(got, want) {
			t.Errorf("%s (%q, action %d): checked out as %q, git writes %q", name, contents[name], act, got, want)
		}
		st := statsOf(contents[name])
		if act.addsCR(&st) {
			streamed, err := io.ReadAll(newLFToCRLF(iotestOneByte(contents[name])))
			if err != nil {
				t.Fatal(err)
			}
			if !bytes.Equal(streamed, want) {
				t.Errorf("%s: streamed checkout %q, git writes %q", name, streamed, want)
			}
			if len(want) != len(contents[name])+int(st.loneLF) {
				t.Errorf("%s: stats said %d lone LFs, git added %d bytes", name, st.loneLF, len(want)-len(contents[name]))
			}
		}
	}
}

// TestLineEndingReadersAcrossChunks feeds the streaming converters one
// byte at a time and in large chunks, with CR and LF split across reads.
func TestLineEndingReadersAcrossChunks(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	for range 500 {
		c := eolContent(r)
		if r.IntN(4) == 0 {
			c = bytes.Repeat(c, 2000) // several internal buffers
		}
		wantLF := naiveCRLFToLF(c)
		wantCRLF := naiveLFToCRLF(c)
		for _, src := range []func() io.Reader{
			func() io.Reader { return bytes.NewReader(c) },
			func() io.Reader { return iotestOneByte(c) },
		} {
			got, err := io.ReadAll(newCRLFToLF(src()))
			if err != nil || !bytes.Equal(got, wantLF) {
				t.Fatalf("crlfToLF(%q) = %q, %v; want %q", c, got, err, wantLF)
			}
			got, err = io.ReadAll(newLFToCRLF(src()))
			if err != nil || !bytes.Equal(got, wantCRLF) {
				t.Fatalf("lfToCRLF(%q) = %q, %v; want %q", c, got, err, wantCRLF)
			}
			var st textStats
			if _, err := io.Copy(&st, src()); err != nil {
				t.Fatal(err)
			}
			st.finish()
			if whole := statsOf(c); st != whole {
				t.Fatalf("stats of %q streamed %+v, whole %+v", c, st, whole)
			}
		}
	}
}

func naiveCRLFToLF(c []byte) []byte {
	return bytes.ReplaceAll(c, []byte("\r\n"), []byte("\n"))
}

func naiveLFToCRLF(c []byte) []byte {
	var out []byte
	for i, b := range c {
		if b == '\n' && (i == 0 || c[i-1] != '\r') {
			out = append(out, '\r')
		}
		out = append(out, b)
	}
	return out
}

// oneByteReader returns one byte per Read.
type oneByteReader struct{ b []byte }

func (o *oneByteReader) Read(p []byte) (int, error) {
	if len(o.b) == 0 {
		return 0, io.EOF
	}
	if len(p) == 0 {
		return 0, nil
	}
	p[0], o.b = o.b[0], o.b[1:]
	return 1, nil
}

func iotestOneByte(b []byte) io.Reader { return &oneByteReader{b: b} }
