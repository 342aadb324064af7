package gitops

import (
	"bytes"
	"context"
	"fmt"
	"path/filepath"
	"strings"
	"testing"
)

// CommitTree reads small files into memory and streams larger ones through
// the spool; on either side of the limit, new or already stored, a file's
// blob must be the one git records, and .gitignore files of any size must
// apply.
func TestCommitTreeBlobSizes(t *testing.T) {
	body := func(name string, size int) string {
		b := []byte(strings.Repeat(name+"\n", size/(len(name)+1)+1))
		return string(b[:size])
	}
	sizes := []struct {
		name string
		size int
	}{
		{"empty", 0},
		{"one", 1},
		{"under", smallBlob - 1},
		{"edge", smallBlob},
		{"over", smallBlob + 1},
		{"big", 3*smallBlob + 7},
	}
	base := map[string]file{}
	for _, s := range sizes {
		base["kept/"+s.name] = file{content: body("kept "+s.name, s.size)}
		base["changed/"+s.name] = file{content: body("old "+s.name, s.size)}
	}
	repo, commit := newRepo(t, base)
	checkout := filepath.Join(t.TempDir(), "checkout")
	gitRun(t, repo, "clone", "-q", "--no-local", repo, checkout)
	change := map[string]file{
		// A .gitignore over the limit, its rule at the very end.
		".gitignore":         {content: body("# padding", smallBlob+100) + "\nignored-*\n"},
		"nested/.gitignore":  {content: "skip.txt\n"},
		"nested/skip.txt":    {content: "ignored\n"},
		"nested/kept.txt":    {content: "kept\n"},
		"ignored-large.bin":  {content: body("ignored", 2*smallBlob)},
		"changed/empty":      {content: "now not empty\n"},
		"changed/under":      {content: body("new under", smallBlob-1)},
		"changed/edge":       {content: body("new edge", smallBlob)},
		"changed/over":       {content: body("new over", smallBlob+1)},
		"changed/big":        {content: body("new big", 3*smallBlob+7)},
		"changed/one":        {content: "x", mode: 0o755},
		"same-as-kept/under": {content: body("kept under", smallBlob-1)},
	}
	for _, s := range sizes {
		change["added/"+s.name] = file{content: body("added "+s.name, s.size)}
	}
	writeFiles(t, checkout, change)
	snap := tarDir(t, checkout)
	gitRun(t, checkout, "add", "-A")
	want := gitRun(t, checkout, "write-tree")

	res, err := CommitTree(context.Background(), repo, commit, bytes.NewReader(snap), CommitOptions{Branch: "runner/sizes"})
	if err != nil {
		t.Fatal(err)
	}
	if res.Tree.String() != want {
		t.Errorf("tree %s, want git add -A tree %s\ngot:\n%s\nwant:\n%s", res.Tree, want,
			gitRun(t, repo, "ls-tree", "-r", res.Tree.String()), gitRun(t, checkout, "ls-tree", "-r", want))
	}
	for _, s := range sizes {
		p := "added/" + s.name
		if got := gitRun(t, repo, "cat-file", "-s", "runner/sizes:"+p); got != fmt.Sprint(s.size) {
			t.Errorf("%s: blob of %s bytes, want %d", p, got, s.size)
		}
	}
	fsckStrict(t, repo)
}
