package gitops

import (
	"archive/tar"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os/exec"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"
)

// gitBounded runs git in dir like gitRun, ended after a minute: git's own
// matcher can take hours on hostile patterns, and no test may leave it
// running.
func gitBounded(t *testing.T, dir string, args ...string) string {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), time.Minute)
	defer cancel()
	cmd := execGit(dir, args...)
	bounded := exec.CommandContext(ctx, cmd.Path, cmd.Args[1:]...)
	bounded.Dir, bounded.Env = cmd.Dir, cmd.Env
	var stdout, stderr bytes.Buffer
	bounded.Stdout, bounded.Stderr = &stdout, &stderr
	if err := bounded.Run(); err != nil {
		t.Fatalf("git %s: %v: %s", strings.Join(args, " "), err, stderr.String())
	}
	return strings.TrimRight(stdout.String(), "\n")
}

// hostileIgnore is a .gitignore of long star patterns, and the names of a
// workspace that makes a backtracking matcher try every split of every
// star: 40 patterns that match nothing, one that matches the names ending
// in "a7", one anchored in a directory.
func hostileIgnore() (ignore string, paths []string) {
	var b strings.Builder
	for i := range 40 {
		fmt.Fprintf(&b, "%sb%d\n", strings.Repeat("*a", 30), i)
	}
	b.WriteString(strings.Repeat("*a", 30) + "7\n")
	b.WriteString("d1/" + strings.Repeat("*a", 20) + "*3\n")
	for i := range 300 {
		name := strings.Repeat("a", 120) + fmt.Sprint(i)
		switch i % 3 {
		case 1:
			name = "d1/" + name
		case 2:
			name = "d1/d2/" + name
		}
		paths = append(paths, name)
	}
	return b.String(), paths
}

// hostileIgnored is the oracle for hostileIgnore, with Go's regexp (a
// linear-time engine written independently of wildmatch).
func hostileIgnored(p string) bool {
	base := p[strings.LastIndexByte(p, '/')+1:]
	if regexp.MustCompile(`^([^/]*a){30}7$`).MatchString(base) {
		return true
	}
	return regexp.MustCompile(`^d1/([^/]*a){20}[^/]*3$`).MatchString(p)
}

// The cost of ignore evaluation is bounded by what it matches, not by the
// shape of the patterns: every (path, rule) pair costs at most one step
// per byte of the path and word of the pattern's state.
func TestHostileIgnoreRulesCostIsBounded(t *testing.T) {
	ignore, paths := hostileIgnore()
	ig, err := newIgnoreRules(nil, map[string][]byte{"": []byte(ignore)})
	if err != nil {
		t.Fatal(err)
	}
	rules := strings.Count(ignore, "\n")
	bound := 0
	for _, p := range paths {
		got := ig.ignored(p)
		if want := hostileIgnored(p); got != want {
			t.Errorf("ignored(%q) = %v, want %v", p, got, want)
		}
		// The path and each directory above it, against every rule.
		for d := p; d != "."; d = parentDir(d) {
			bound += rules * (len(d)*(len("*a")*30/64+2) + 1)
		}
	}
	if ig.steps > bound {
		t.Errorf("ignore evaluation took %d steps for %d paths and %d rules, want at most %d", ig.steps, len(paths), rules, bound)
	}
	t.Logf("%d steps, bound %d", ig.steps, bound)
}

func parentDir(p string) string {
	if i := strings.LastIndexByte(p, '/'); i >= 0 {
		return p[:i]
	}
	return "."
}

// A commit of a workspace whose .gitignore holds hostile patterns completes
// (a backtracking matcher spends minutes on this one) and leaves out what
// the patterns match.
func TestCommitTreeWithHostileGitignore(t *testing.T) {
	ignore, paths := hostileIgnore()
	repo, base := newRepo(t, map[string]file{"README": {content: "r\n"}})
	entries := []entry{{name: "./", typeflag: tar.TypeDir}, {name: "./README", body: "r\n"}, {name: "./.gitignore", body: ignore}}
	for _, p := range paths {
		entries = append(entries, entry{name: "./" + p, body: "x"})
	}
	res, err := CommitTree(t.Context(), repo, base, bytes.NewReader(tarOf(t, entries...)), CommitOptions{Branch: "hostile"})
	if err != nil {
		t.Fatal(err)
	}
	got := strings.Split(gitBounded(t, repo, "ls-tree", "-r", "--name-only", res.Hash.String()), "\n")
	want := []string{".gitignore", "README"}
	for _, p := range paths {
		if !hostileIgnored(p) {
			want = append(want, p)
		}
	}
	slices.Sort(want)
	if !slices.Equal(got, want) {
		t.Errorf("committed %d paths, want %d; missing or extra: %q", len(got), len(want), symmetricDiff(got, want))
	}
	if len(want) == len(paths)+2 {
		t.Fatal("the oracle ignores nothing: the test proves little")
	}
}

func symmetricDiff(a, b []string) []string {
	var out []string
	for _, x := range a {
		if !slices.Contains(b, x) {
			out = append(out, "+"+x)
		}
	}
	for _, x := range b {
		if !slices.Contains(a, x) {
			out = append(out, "-"+x)
		}
	}
	return out
}

// Ignore files beyond the bounds refuse the snapshot with an error naming
// the file (and the line of a pattern too long).
func TestCommitTreeRefusesOversizedIgnoreRules(t *testing.T) {
	manyRules := func(n int) string {
		var b strings.Builder
		for i := range n {
			fmt.Fprintf(&b, "f%d\n", i)
		}
		return b.String()
	}
	tests := []struct {
		name    string
		entries []entry
		want    []string
	}{
		{"file too large", []entry{{name: "./.gitignore", body: "# " + strings.Repeat("c", maxIgnoreFileSize)}},
			[]string{`"./.gitignore"`, "exceeds the 1048576-byte limit"}},
		{"pattern too long", []entry{{name: "./sub/.gitignore", body: "ok\n\n" + strings.Repeat("*a", 513) + "\n"}},
			[]string{`"./sub/.gitignore"`, "sub/.gitignore:3", "exceeds the 1024-byte limit"}},
		{"too many rules", []entry{{name: "./.gitignore", body: manyRules(6000)}, {name: "./x/.gitignore", body: manyRules(4001)}},
			[]string{`"./x/.gitignore"`, "more than 10000 ignore rules"}},
		{"too many pattern bytes", []entry{{name: "./.gitignore", body: strings.Repeat(strings.Repeat("p", 1000)+"\n", 1000)}, {name: "./y/.gitignore", body: strings.Repeat(strings.Repeat("q", 1000)+"\n", 100)}},
			[]string{`"./y/.gitignore"`, "more than 1048576 bytes of ignore patterns"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			repo, base := newRepo(t, map[string]file{"README": {content: "r\n"}})
			_, err := CommitTree(t.Context(), repo, base, bytes.NewReader(tarOf(t, tt.entries...)), CommitOptions{Branch: "big-rules"})
			if !errors.Is(err, ErrUnsafeSnapshot) {
				t.Fatalf("err = %v, want the snapshot refused", err)
			}
			for _, w := range tt.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error %q does not say %q", err, w)
				}
			}
			if branchExists(repo, "big-rules") {
				t.Error("branch created for a refused snapshot")
			}
		})
	}
}

// A cancelled context ends the commit while the stream is read, even in
// the middle of a huge entry that tar skips: the reader cancels once it
// has given 8 MiB of a 1 TiB file, and CommitTree must return.
func TestCommitTreeStopsWhenCancelledInsideAnEntry(t *testing.T) {
	for _, name := range []string{"./target/huge", "./huge"} {
		t.Run(name, func(t *testing.T) {
			repo, base := newRepo(t, map[string]file{"README": {content: "r\n"}})
			ctx, cancel := context.WithCancel(t.Context())
			defer cancel()
			r := streamTar(func(tw *tar.Writer) error {
				if err := tw.WriteHeader(&tar.Header{Name: "./.gitignore", Mode: 0o644, Size: 8, Typeflag: tar.TypeReg}); err != nil {
					return err
				}
				if _, err := tw.Write([]byte("target/\n")); err != nil {
					return err
				}
				if err := tw.WriteHeader(&tar.Header{Name: name, Mode: 0o644, Size: 1 << 40, Typeflag: tar.TypeReg}); err != nil {
					return err
				}
				_, err := io.Copy(tw, &cancelAfter{n: 8 << 20, cancel: cancel})
				return err
			})
			defer r.Close()
			_, err := CommitTree(ctx, repo, base, r, CommitOptions{Branch: "cancelled"})
			if !errors.Is(err, context.Canceled) {
				t.Fatalf("err = %v, want context.Canceled", err)
			}
		})
	}
}

// cancelAfter reads zeros and calls cancel once it has given n bytes.
type cancelAfter struct {
	n      int
	cancel func()
}

func (c *cancelAfter) Read(p []byte) (int, error) {
	if c.n <= 0 {
		c.cancel()
	}
	k := min(len(p), max(c.n, 1<<10))
	clear(p[:k])
	c.n -= k
	return k, nil
}

// Planning the tree checks the context before matching any path: a
// cancelled commit does no ignore work at all.
func TestPlanCommitHonoursCancellation(t *testing.T) {
	ignore, paths := hostileIgnore()
	repo, base := newRepo(t, map[string]file{"README": {content: "r\n"}})
	entries := []entry{{name: "./.gitignore", body: ignore}}
	for _, p := range paths {
		entries = append(entries, entry{name: "./" + p, body: "x"})
	}
	r, err := openRepo(repo)
	if err != nil {
		t.Fatal(err)
	}
	baseFiles := map[string]treeEntry{}
	ig, err := newIgnoreRules(nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	spool, err := newSpool()
	if err != nil {
		t.Fatal(err)
	}
	defer spool.Close()
	snap, err := parseSnapshot(t.Context(), r, baseFiles, bytes.NewReader(tarOf(t, entries...)), CommitOptions{}, spool, DefaultMaxCommitSize, ig)
	if err != nil {
		t.Fatal(err)
	}
	_ = base
	ctx, cancel := context.WithCancel(t.Context())
	cancel()
	before := ig.steps
	if _, _, err := planCommit(ctx, r, baseFiles, snap, ig); !errors.Is(err, context.Canceled) {
		t.Fatalf("planCommit with a cancelled context: %v, want context.Canceled", err)
	}
	if ig.steps != before {
		t.Errorf("planCommit matched %d steps after cancellation, want none", ig.steps-before)
	}
}
