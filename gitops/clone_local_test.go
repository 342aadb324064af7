package gitops

import (
	"context"
	"errors"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// A shallow clone of a plain path reads the source directly. git is the
// reference: the clone holds exactly the objects of `git clone --depth 1
// --branch B file://SRC` (no other branch's), with the same refs, refspec
// and upstream, passes fsck, and is clean. The source has loose objects,
// whole objects in a pack and, on the branch "old", a blob stored as a
// delta, so both ways of copying an object are used; bare and non-bare.
func TestCloneLocalShallowMatchesGit(t *testing.T) {
	src, _ := newRepo(t, map[string]file{"big.txt": {content: bigText(0)}, "run.sh": {content: "#!/bin/sh\n", mode: 0o755}, "l": {link: "big.txt"}})
	gitRun(t, src, "branch", "old")
	writeFiles(t, src, map[string]file{"big.txt": {content: bigText(1)}, "dir/sub/x.txt": {content: "x\n"}})
	gitRun(t, src, "add", "-A")
	gitRun(t, src, "commit", "-q", "-m", "newer")
	gitRun(t, src, "gc", "-q", "--aggressive")
	// After gc the newest version of big.txt is whole and the older one,
	// the tip of "old", a delta against it.
	oldBlob := gitRun(t, src, "rev-parse", "old:big.txt")
	if verify := gitRun(t, src, "verify-pack", "-v", packOf(t, src)); !isDelta(verify, oldBlob) {
		t.Fatalf("precondition: old:big.txt is not stored as a delta:\n%s", verify)
	}
	writeFiles(t, src, map[string]file{"loose.txt": {content: "loose\n"}})
	gitRun(t, src, "add", "-A")
	gitRun(t, src, "commit", "-q", "-m", "loose objects")
	gitRun(t, src, "tag", "-a", "-m", "a tag", "v2")
	bare := filepath.Join(t.TempDir(), "bare.git")
	gitRun(t, "", "clone", "-q", "--bare", src, bare)

	for _, tc := range []struct{ name, src, ref string }{
		{"default branch", src, ""},
		{"branch with a delta", src, "old"},
		{"annotated tag", src, "v2"},
		{"bare source", bare, "main"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := filepath.Join(t.TempDir(), "got")
			ws, err := Clone(context.Background(), CloneOptions{URL: tc.src, Ref: tc.ref, Dir: got, Depth: 1})
			if err != nil {
				t.Fatalf("Clone: %v", err)
			}
			want := filepath.Join(t.TempDir(), "want")
			args := []string{"clone", "-q", "--depth", "1"}
			if tc.ref != "" {
				args = append(args, "--branch", tc.ref)
			}
			gitRun(t, "", append(args, "file://"+tc.src, want)...)

			if g, w := allObjects(t, got), allObjects(t, want); !slices.Equal(g, w) {
				t.Errorf("objects differ from git's shallow clone:\ngot  %v\nwant %v", g, w)
			}
			for _, q := range [][]string{
				{"rev-parse", "HEAD"},
				{"rev-parse", "--is-shallow-repository"},
				{"for-each-ref", "--format=%(refname) %(objectname)"},
				{"config", "--get-all", "remote.origin.fetch"},
				{"ls-files", "-s"},
				{"status", "--porcelain"},
			} {
				// git also records the remote's HEAD; nothing reads it here.
				g, w := gitRun(t, got, q...), withoutLine(gitRun(t, want, q...), "refs/remotes/origin/HEAD ")
				if g != w {
					t.Errorf("git %s:\ngot  %q\nwant %q", strings.Join(q, " "), g, w)
				}
			}
			for _, q := range [][]string{{"symbolic-ref", "-q", "HEAD"}, {"config", "branch." + tc.ref + ".merge"}} {
				g, gerr := gitTry(got, q...)
				w, werr := gitTry(want, q...)
				if g != w || (gerr == nil) != (werr == nil) {
					t.Errorf("git %s: got %q (%v), want %q (%v)", strings.Join(q, " "), g, gerr, w, werr)
				}
			}
			if ws.Base.String() != gitRun(t, want, "rev-parse", "HEAD") || !ws.Shallow || ws.RemoteURL != tc.src {
				t.Errorf("workspace = %+v", ws)
			}
			if g, w := listTree(t, got), listTree(t, want); g != w {
				t.Errorf("worktree differs from git's:\ngot:\n%s\nwant:\n%s", g, w)
			}
			fsckStrict(t, got)
		})
	}
}

// The errors of a local clone are those of any clone, and leave nothing.
func TestCloneLocalFailures(t *testing.T) {
	src, _ := sourceRepo(t)
	dir := t.TempDir()
	_, err := Clone(context.Background(), CloneOptions{URL: src, Ref: "no-such-branch", Dir: dir, Depth: 1})
	if !errors.Is(err, ErrRefNotFound) || !strings.Contains(err.Error(), src) {
		t.Fatalf("err = %v, want ErrRefNotFound naming %s", err, src)
	}
	assertEmptyDir(t, dir)
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := Clone(ctx, CloneOptions{URL: src, Dir: dir, Depth: 1}); !errors.Is(err, context.Canceled) {
		t.Fatalf("cancelled clone: err = %v, want context.Canceled", err)
	}
	assertEmptyDir(t, dir)
}

func withoutLine(s, prefix string) string {
	lines := strings.Split(s, "\n")
	return strings.Join(slices.DeleteFunc(lines, func(l string) bool { return strings.HasPrefix(l, prefix) }), "\n")
}

func bigText(version int) string {
	var b strings.Builder
	for i := range 2000 {
		if i == 1000 && version > 0 {
			b.WriteString("a changed line\n")
			continue
		}
		b.WriteString("line " + strings.Repeat("x", i%40) + "\n")
	}
	return b.String()
}

func packOf(t *testing.T, repo string) string {
	t.Helper()
	packs, _ := filepath.Glob(filepath.Join(repo, ".git", "objects", "pack", "pack-*.idx"))
	if len(packs) != 1 {
		t.Fatalf("want one pack in %s, got %v", repo, packs)
	}
	return packs[0]
}

// isDelta reports whether verify-pack lists obj as a delta (a line with a
// depth and a base after the sizes).
func isDelta(verify, obj string) bool {
	for line := range strings.SplitSeq(verify, "\n") {
		if f := strings.Fields(line); len(f) == 7 && f[0] == obj {
			return true
		}
	}
	return false
}

// allObjects lists every object a repository holds, as git sees them.
func allObjects(t *testing.T, repo string) []string {
	t.Helper()
	out := gitRun(t, repo, "cat-file", "--batch-all-objects", "--batch-check=%(objectname) %(objecttype)")
	lines := strings.Split(out, "\n")
	slices.Sort(lines)
	return lines
}
