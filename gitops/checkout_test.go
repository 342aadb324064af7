package gitops

import (
	"context"
	"crypto/sha256"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// Clone's own checkout leaves the worktree and the index that `git clone`
// leaves: the same files, modes, links and content, the same index, and a
// clean status, on a tree with nested directories, executables, links
// (dangling and to a directory), empty and large files, odd names, names
// that sort differently as paths and as tree entries, and a submodule.
func TestCloneCheckoutMatchesGit(t *testing.T) {
	big := strings.Repeat("0123456789abcdef", inlineBlob/16+5) // streamed
	src, _ := newRepo(t, map[string]file{
		"README.md":               {content: "readme\n"},
		"empty":                   {content: ""},
		"bin/run.sh":              {content: "#!/bin/sh\necho run\n", mode: 0o755},
		"a.txt":                   {content: "a dot txt\n"},
		"a/b/c/deep.go":           {content: "package c\n"},
		"a-b":                     {content: "dash\n"},
		"a0":                      {content: "zero\n"},
		"with space/ü ñ.txt":      {content: "unicode\n"},
		"big.bin":                 {content: big},
		"big-exec":                {content: big, mode: 0o755},
		"links/to-readme":         {link: "../README.md"},
		"links/to-dir":            {link: "../a/b"},
		"links/dangling":          {link: "../nowhere"},
		"links/outside":           {link: "/etc/passwd"},
		"many/1.txt":              {content: "1\n"},
		"many/2.txt":              {content: "2\n"},
		"many/sub/3.txt":          {content: "3\n"},
		".gitignore":              {content: "*.log\n"},
		"kept-though-ignored.log": {content: "tracked anyway\n"},
	})
	// A submodule entry (a gitlink) without a .gitmodules: git clone leaves
	// an empty directory and the commit in the index.
	gitRun(t, src, "update-index", "--add", "--cacheinfo", "160000,"+gitRun(t, src, "rev-parse", "HEAD")+",vendor/sub")
	gitRun(t, src, "commit", "-q", "-m", "submodule")

	want := filepath.Join(t.TempDir(), "git")
	gitRun(t, t.TempDir(), "clone", "-q", src, want)
	// Depth 1 of a plain path is the local clone (clone_local.go); the
	// full one goes through the pack protocol.
	for _, depth := range []int{0, 1} {
		got := filepath.Join(t.TempDir(), "runner")
		if _, err := Clone(context.Background(), CloneOptions{URL: src, Dir: got, Depth: depth}); err != nil {
			t.Fatalf("Clone depth %d: %v", depth, err)
		}
		if g, w := gitRun(t, got, "ls-files", "-s"), gitRun(t, want, "ls-files", "-s"); g != w {
			t.Errorf("depth %d: index differs from git clone's:\nrunner:\n%s\ngit:\n%s", depth, g, w)
		}
		if s := gitRun(t, got, "status", "--porcelain", "--ignored"); s != "" {
			t.Errorf("depth %d: fresh clone is not clean:\n%s", depth, s)
		}
		if g, w := listTree(t, got), listTree(t, want); g != w {
			t.Errorf("depth %d: worktree differs from git clone's:\nrunner:\n%s\ngit:\n%s", depth, g, w)
		}
		fsckStrict(t, got)
	}
}

// listTree describes every path of a worktree outside .git: its type, its
// permission bits, and its content or link target.
func listTree(t *testing.T, dir string) string {
	t.Helper()
	var b strings.Builder
	err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(dir, p)
		if rel == ".git" {
			return filepath.SkipDir
		}
		fi, err := os.Lstat(p)
		if err != nil {
			return err
		}
		b.WriteString(rel + " " + fi.Mode().String())
		switch {
		case fi.Mode()&fs.ModeSymlink != 0:
			target, err := os.Readlink(p)
			if err != nil {
				return err
			}
			b.WriteString(" -> " + target)
		case fi.Mode().IsRegular():
			content, err := os.ReadFile(p)
			if err != nil {
				return err
			}
			b.WriteString(" " + hashOf(content))
		}
		b.WriteString("\n")
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return b.String()
}

func hashOf(b []byte) string {
	return fmt.Sprintf("%x", sha256.Sum256(b))
}

// A repository whose tree would write outside the workspace, or into its
// .git, is refused by name, and nothing lands outside the workspace.
func TestCloneRefusesHostileTrees(t *testing.T) {
	tests := []struct {
		name  string
		tree  func(t *testing.T, repo, blob string) string // returns the root tree
		wants string
	}{
		{"dot-dot", func(t *testing.T, repo, blob string) string {
			return mktree(t, repo, "100644 blob "+blob+"\t..")
		}, `".."`},
		{"dot-git in another case", func(t *testing.T, repo, blob string) string {
			hooks := mktree(t, repo, "100755 blob "+blob+"\tpost-checkout")
			return mktree(t, repo, "040000 tree "+hooks+"\t.GIT")
		}, ".GIT"},
		{"a link and a directory of one name", func(t *testing.T, repo, blob string) string {
			outside := filepath.Join(t.TempDir(), "outside")
			if err := os.Mkdir(outside, 0o755); err != nil {
				t.Fatal(err)
			}
			target := mustGitStdin(t, repo, outside, "hash-object", "-w", "--stdin")
			sub := mktree(t, repo, "100644 blob "+blob+"\tplanted")
			return mktree(t, repo, "120000 blob "+target+"\ta", "040000 tree "+sub+"\ta")
		}, "a"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			src, _ := newRepo(t, map[string]file{"README.md": {content: "x\n"}})
			blob := mustGitStdin(t, src, "#!/bin/sh\ntouch "+filepath.Join(t.TempDir(), "ran")+"\n", "hash-object", "-w", "--stdin")
			commit := gitRun(t, src, "commit-tree", "-m", "hostile", tt.tree(t, src, blob))
			gitRun(t, src, "update-ref", "refs/heads/main", commit)
			gitRun(t, src, "symbolic-ref", "HEAD", "refs/heads/main")

			for _, depth := range []int{0, 1} { // the pack protocol; the local clone
				parent := t.TempDir()
				dir := filepath.Join(parent, "ws")
				_, err := Clone(context.Background(), CloneOptions{URL: src, Dir: dir, Depth: depth})
				if err == nil || !strings.Contains(err.Error(), tt.wants) {
					t.Fatalf("Clone depth %d: %v, want an error naming %s", depth, err, tt.wants)
				}
				if errors.Is(err, ErrRefNotFound) {
					t.Fatalf("Clone depth %d: %v: refused for the wrong reason", depth, err)
				}
				entries, _ := os.ReadDir(parent)
				if len(entries) > 1 || (len(entries) == 1 && entries[0].Name() != "ws") {
					t.Errorf("depth %d: clone wrote beside the workspace: %v", depth, entries)
				}
				if rest, _ := os.ReadDir(dir); len(rest) != 0 {
					t.Errorf("depth %d: a failed clone left %d entries in the workspace", depth, len(rest))
				}
			}
		})
	}
}

// mktree writes a tree of the given `git ls-tree` lines, unchecked.
func mktree(t *testing.T, repo string, lines ...string) string {
	t.Helper()
	return mustGitStdin(t, repo, strings.Join(lines, "\n")+"\n", "mktree")
}

// mustGitStdin is gitWithStdin that fails the test on error.
func mustGitStdin(t *testing.T, dir, stdin string, args ...string) string {
	t.Helper()
	out, err := gitWithStdin(dir, stdin, args...)
	if err != nil {
		t.Fatalf("git %s: %v", strings.Join(args, " "), err)
	}
	return out
}
