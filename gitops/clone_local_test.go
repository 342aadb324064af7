package gitops

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// A clone of a repository on this machine (a path or file://) reads the
// source directly. git is the reference: a shallow clone holds exactly the
// objects of `git clone --depth 1 --branch B file://SRC` (no other
// branch's), a full one those of `git clone --branch B SRC`, with the same
// refs, refspec, upstream, index and worktree; both pass fsck. The source
// has loose objects, whole objects in a pack and, on the branch "old", a
// blob stored as a delta, so both ways of copying an object are used; bare
// and non-bare.
func TestCloneLocalMatchesGit(t *testing.T) {
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

	type cloneCase struct {
		name, src, url, ref string
		depth               int
	}
	var cases []cloneCase
	for _, depth := range []int{1, 0} {
		for _, c := range []cloneCase{
			{name: "default branch", src: src, url: src},
			{name: "file URL", src: src, url: "file://" + src, ref: "main"},
			{name: "branch with a delta", src: src, url: src, ref: "old"},
			{name: "annotated tag", src: src, url: src, ref: "v2"},
			{name: "bare source", src: bare, url: bare, ref: "main"},
		} {
			c.depth = depth
			c.name = fmt.Sprintf("depth %d %s", depth, c.name)
			cases = append(cases, c)
		}
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			got := filepath.Join(t.TempDir(), "got")
			ws, err := Clone(context.Background(), CloneOptions{URL: tc.url, Ref: tc.ref, Dir: got, Depth: tc.depth})
			if err != nil {
				t.Fatalf("Clone: %v", err)
			}
			want := filepath.Join(t.TempDir(), "want")
			args := []string{"clone", "-q"}
			if tc.ref != "" {
				args = append(args, "--branch", tc.ref)
			}
			if tc.depth > 0 {
				args = append(args, "--depth", "1", "file://"+tc.src, want)
			} else {
				args = append(args, tc.src, want)
			}
			gitRun(t, "", args...)

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
			if ws.Base.String() != gitRun(t, want, "rev-parse", "HEAD") || ws.Shallow != (tc.depth > 0) || ws.RemoteURL != tc.url {
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

// A linked worktree (its .git is a file) goes through the pack protocol; a
// source whose HEAD is detached, with no ref asked for, is cloned at it.
func TestCloneLocalWorktreeAndDetachedHead(t *testing.T) {
	src, commits := sourceRepo(t)
	wt := filepath.Join(t.TempDir(), "wt")
	gitRun(t, src, "worktree", "add", "-q", wt, "feature")
	if localGitDir(wt) != "" {
		t.Fatalf("localGitDir(%s) = %q, want the protocol for a linked worktree", wt, localGitDir(wt))
	}
	ws, err := Clone(context.Background(), CloneOptions{URL: wt, Ref: "feature", Dir: filepath.Join(t.TempDir(), "a"), Depth: 1})
	if err != nil || ws.Base.String() != commits["c3"] {
		t.Fatalf("clone of a worktree: %+v, %v; want base %s", ws, err, commits["c3"])
	}
	gitRun(t, src, "checkout", "-q", "--detach", commits["c1"])
	ws, err = Clone(context.Background(), CloneOptions{URL: src, Dir: filepath.Join(t.TempDir(), "b"), Depth: 1})
	if err != nil || ws.Base.String() != commits["c1"] {
		t.Fatalf("clone of a detached HEAD: %+v, %v; want base %s", ws, err, commits["c1"])
	}
	if got := gitRun(t, ws.Dir, "rev-parse", "HEAD"); got != commits["c1"] || ws.Ref != "" || !ws.Shallow {
		t.Errorf("clone of a detached HEAD: HEAD %s, workspace %+v; want %s, no ref, shallow", got, ws, commits["c1"])
	}
	fsckStrict(t, ws.Dir)
}
