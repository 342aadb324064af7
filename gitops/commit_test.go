package gitops

import (
	"bytes"
	"context"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/go-git/go-git/v5/plumbing"
)

// TestCommitTreeMatchesGitAddAll is the central contract: for each fixture
// the tree CommitTree records equals the one `git add -A && git write-tree`
// gives in a real checkout holding the same files, and the user's
// repository is left exactly as it was apart from the new branch.
func TestCommitTreeMatchesGitAddAll(t *testing.T) {
	for _, fx := range slices.Concat(treeFixtures, attrTreeFixtures, submoduleTreeFixtures) {
		t.Run(fx.name, func(t *testing.T) {
			repo, base := newRepo(t, fx.base)
			if fx.raw {
				repo = newRawRepo(t, fx.base)
				base = plumbing.NewHash(gitRun(t, repo, "rev-parse", "HEAD"))
			}
			if fx.setup != nil {
				fx.setup(t, repo)
				gitRun(t, repo, "commit", "-q", "-m", "setup")
				base = plumbing.NewHash(gitRun(t, repo, "rev-parse", "HEAD"))
			}
			checkout := filepath.Join(t.TempDir(), "checkout")
			gitRun(t, repo, "clone", "-q", "--no-local", repo, checkout)
			cloned := statTree(t, checkout)
			if fx.attributes != "" {
				for _, d := range []string{repo, checkout} {
					if err := os.WriteFile(filepath.Join(d, ".git", "info", "attributes"), []byte(fx.attributes), 0o644); err != nil {
						t.Fatal(err)
					}
				}
			}
			if fx.exclude != "" {
				for _, d := range []string{repo, checkout} {
					if err := os.WriteFile(filepath.Join(d, ".git", "info", "exclude"), []byte(fx.exclude), 0o644); err != nil {
						t.Fatal(err)
					}
				}
			}
			fx.change(t, checkout)
			changedLater(t, checkout, cloned)
			snap := tarDir(t, checkout)
			gitRun(t, checkout, "add", "-A")
			want := gitRun(t, checkout, "write-tree")
			wantStatus := gitRun(t, checkout, "diff", "--cached", "--no-renames", "--name-status", "HEAD")

			// Work in progress in the user's repository must survive.
			writeFiles(t, repo, map[string]file{"user-wip.txt": {content: "wip\n"}})
			gitRun(t, repo, "add", "user-wip.txt")
			writeFiles(t, repo, map[string]file{"untracked.txt": {content: "u\n"}})
			before := stateOf(t, repo)

			res, err := CommitTree(context.Background(), repo, base, bytes.NewReader(snap), CommitOptions{
				Branch:   "runner/" + fx.name,
				Message:  "Agent work on " + fx.name,
				Trailers: []Trailer{{"Runner-Task", fx.name}, {"Runner-Model", "test-model"}},
			})
			if err != nil {
				t.Fatalf("CommitTree: %v", err)
			}
			if got := gitRun(t, repo, "rev-parse", "runner/"+fx.name+"^{tree}"); got != want {
				t.Errorf("branch tree = %s, want git add -A tree %s\ngot:\n%s\nwant:\n%s", got, want,
					gitRun(t, repo, "ls-tree", "-r", got), gitRun(t, checkout, "ls-tree", "-r", want))
			}
			if res.Tree.String() != want {
				t.Errorf("result tree = %s, want %s", res.Tree, want)
			}
			if got := gitRun(t, repo, "rev-parse", "runner/"+fx.name); got != res.Hash.String() {
				t.Errorf("branch = %s, want result hash %s", got, res.Hash)
			}
			if got := gitRun(t, repo, "log", "-1", "--format=%P", res.Hash.String()); got != base.String() {
				t.Errorf("parents = %q, want base %s", got, base)
			}
			if got := gitRun(t, repo, "diff", "--no-renames", "--name-status", base.String(), "runner/"+fx.name); got != wantStatus {
				t.Errorf("git diff base branch:\n%s\nwant:\n%s", got, wantStatus)
			}
			if got, want := changesText(res.Changes), wantStatus; got != want {
				t.Errorf("result changes:\n%s\nwant:\n%s", got, want)
			}
			fsckStrict(t, repo)
			assertStateUnchanged(t, repo, before)
		})
	}
}

func changesText(cs []FileChange) string {
	lines := make([]string, len(cs))
	for i, c := range cs {
		p := c.Path
		if strings.ContainsAny(p, "\"\\\t\n") || strings.ContainsFunc(p, func(r rune) bool { return r >= 0x80 }) {
			p = quoteLikeGit(p)
		}
		lines[i] = c.Kind.String() + "\t" + p
	}
	return strings.Join(lines, "\n")
}

// quoteLikeGit quotes a path the way core.quotePath does (octal escapes).
func quoteLikeGit(p string) string {
	var b strings.Builder
	b.WriteByte('"')
	for i := 0; i < len(p); i++ {
		switch c := p[i]; {
		case c == '"' || c == '\\':
			b.WriteByte('\\')
			b.WriteByte(c)
		case c == '\t':
			b.WriteString(`\t`)
		case c == '\n':
			b.WriteString(`\n`)
		case c >= 0x80 || c < 0x20:
			b.WriteString(`\` + string('0'+(c>>6)) + string('0'+((c>>3)&7)) + string('0'+(c&7)))
		default:
			b.WriteByte(c)
		}
	}
	b.WriteByte('"')
	return b.String()
}

func TestCommitTreeMessageAndSignature(t *testing.T) {
	repo, base := newRepo(t, map[string]file{"a.txt": {content: "a\n"}})
	snap := tarOf(t, entry{name: "./a.txt", body: "b\n"})
	when := time.Date(2025, 3, 4, 5, 6, 7, 0, time.FixedZone("", 2*3600))
	res, err := CommitTree(context.Background(), repo, base, bytes.NewReader(snap), CommitOptions{
		Branch:  "runner/msg",
		Message: "Fix the login page\n\nLonger body.\n",
		Trailers: []Trailer{
			{"Runner-Task", "fix-login"}, {"Runner-Model", "gpt-x"}, {"Runner-Status", "done"},
			{"Runner-Tokens", "in=10 out=20"}, {"Runner-Cost-USD", "0.0123"},
		},
		When: when,
	})
	if err != nil {
		t.Fatal(err)
	}
	h := res.Hash.String()
	if got, want := gitRun(t, repo, "log", "-1", "--format=%B", h), "Fix the login page\n\nLonger body.\n\nRunner-Task: fix-login\nRunner-Model: gpt-x\nRunner-Status: done\nRunner-Tokens: in=10 out=20\nRunner-Cost-USD: 0.0123"; got != want {
		t.Errorf("message:\n%q\nwant\n%q", got, want)
	}
	msg := gitRun(t, repo, "log", "-1", "--format=%B", h)
	cmd := []string{"interpret-trailers", "--parse"}
	trailers, err := gitWithStdin(repo, msg, cmd...)
	if err != nil {
		t.Fatal(err)
	}
	if want := "Runner-Task: fix-login\nRunner-Model: gpt-x\nRunner-Status: done\nRunner-Tokens: in=10 out=20\nRunner-Cost-USD: 0.0123"; trailers != want {
		t.Errorf("git interpret-trailers --parse:\n%s\nwant\n%s", trailers, want)
	}
	if got, want := gitRun(t, repo, "log", "-1", "--format=%an <%ae>|%cn <%ce>|%aI", h), "runner <runner@localhost>|runner <runner@localhost>|2025-03-04T05:06:07+02:00"; got != want {
		t.Errorf("signature = %q, want %q", got, want)
	}
}

func gitWithStdin(dir, stdin string, args ...string) (string, error) {
	cmd := execGit(dir, args...)
	cmd.Stdin = strings.NewReader(stdin)
	out, err := cmd.Output()
	return strings.TrimRight(string(out), "\n"), err
}

func TestCommitTreeRefusesBadOptions(t *testing.T) {
	repo, base := newRepo(t, map[string]file{"a.txt": {content: "a\n"}})
	tests := []struct {
		name string
		opts CommitOptions
		want error
	}{
		{"branch with space", CommitOptions{Branch: "my branch"}, ErrInvalidBranch},
		{"branch with dotdot", CommitOptions{Branch: "a..b"}, ErrInvalidBranch},
		{"empty branch", CommitOptions{}, ErrInvalidBranch},
		{"trailer key with space", CommitOptions{Branch: "ok", Trailers: []Trailer{{"Bad Key", "v"}}}, ErrInvalidTrailer},
		{"trailer value with newline", CommitOptions{Branch: "ok", Trailers: []Trailer{{"K", "a\nb"}}}, ErrInvalidTrailer},
		{"author with angle bracket", CommitOptions{Branch: "ok", Author: Signature{Name: "a<b", Email: "x@y"}}, ErrInvalidSignature},
		{"author without email", CommitOptions{Branch: "ok", Author: Signature{Name: "n"}}, ErrInvalidSignature},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			before := objectFiles(t, repo)
			_, err := CommitTree(context.Background(), repo, base, bytes.NewReader(tarOf(t, entry{name: "b.txt", body: "b"})), tt.opts)
			if !errors.Is(err, tt.want) {
				t.Fatalf("err = %v, want %v", err, tt.want)
			}
			if tt.want == ErrInvalidBranch && !strings.Contains(err.Error(), "\""+tt.opts.Branch+"\"") {
				t.Errorf("error %q does not name the branch %q", err, tt.opts.Branch)
			}
			if after := objectFiles(t, repo); !slices.Equal(after, before) {
				t.Errorf("objects written: %d files before, %d after", len(before), len(after))
			}
		})
	}
	if _, err := CommitTree(context.Background(), repo, plumbing.NewHash(strings.Repeat("12", 20)), bytes.NewReader(tarOf(t)), CommitOptions{Branch: "ok"}); err == nil {
		t.Error("CommitTree with an unknown base succeeded")
	}
}

func TestCommitTreeNoChanges(t *testing.T) {
	repo, base := newRepo(t, map[string]file{"a.txt": {content: "a\n"}, "bin/run": {content: "r", mode: 0o755}, "l": {link: "a.txt"}})
	checkout := filepath.Join(t.TempDir(), "co")
	gitRun(t, repo, "clone", "-q", repo, checkout)
	before := objectFiles(t, repo)
	res, err := CommitTree(context.Background(), repo, base, bytes.NewReader(tarDir(t, checkout)), CommitOptions{Branch: "runner/none"})
	if err != nil {
		t.Fatal(err)
	}
	if !res.NoChanges || !res.Hash.IsZero() || res.Branch != "" || len(res.Changes) != 0 {
		t.Errorf("result = %+v, want NoChanges with no hash, branch or changes", res)
	}
	if got := gitRun(t, repo, "rev-parse", "HEAD^{tree}"); res.Tree.String() != got {
		t.Errorf("tree = %s, want base tree %s", res.Tree, got)
	}
	if branchExists(repo, "runner/none") {
		t.Error("branch created for an unchanged snapshot")
	}
	if after := objectFiles(t, repo); !slices.Equal(after, before) {
		t.Errorf("objects written for an unchanged snapshot: %v", after)
	}
}

func TestCommitTreeExistingBranch(t *testing.T) {
	repo, base := newRepo(t, map[string]file{"a.txt": {content: "a\n"}})
	ctx := context.Background()
	first, err := CommitTree(ctx, repo, base, bytes.NewReader(tarOf(t, entry{name: "a.txt", body: "1"})), CommitOptions{Branch: "runner/x"})
	if err != nil {
		t.Fatal(err)
	}
	_, err = CommitTree(ctx, repo, base, bytes.NewReader(tarOf(t, entry{name: "a.txt", body: "2"})), CommitOptions{Branch: "runner/x"})
	if !errors.Is(err, ErrBranchExists) {
		t.Fatalf("second CommitTree err = %v, want ErrBranchExists", err)
	}
	if got := gitRun(t, repo, "rev-parse", "runner/x"); got != first.Hash.String() {
		t.Errorf("branch moved to %s without Force, want %s", got, first.Hash)
	}
	// A packed branch is found too.
	gitRun(t, repo, "pack-refs", "--all")
	if _, err := CommitTree(ctx, repo, base, bytes.NewReader(tarOf(t, entry{name: "a.txt", body: "3"})), CommitOptions{Branch: "runner/x"}); !errors.Is(err, ErrBranchExists) {
		t.Fatalf("CommitTree on packed branch err = %v, want ErrBranchExists", err)
	}
	forced, err := CommitTree(ctx, repo, base, bytes.NewReader(tarOf(t, entry{name: "a.txt", body: "4"})), CommitOptions{Branch: "runner/x", Force: true})
	if err != nil {
		t.Fatalf("CommitTree with Force: %v", err)
	}
	if got := gitRun(t, repo, "rev-parse", "runner/x"); got != forced.Hash.String() {
		t.Errorf("branch = %s after Force, want %s", got, forced.Hash)
	}
	if got := gitRun(t, repo, "show", "runner/x:a.txt"); got != "4" {
		t.Errorf("a.txt on branch = %q, want %q", got, "4")
	}
	fsckStrict(t, repo)

	// A lock left by git (or another task) is reported, not ignored.
	lock := filepath.Join(repo, ".git", "refs", "heads", "runner", "locked.lock")
	if err := os.WriteFile(lock, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	_, err = CommitTree(ctx, repo, base, bytes.NewReader(tarOf(t, entry{name: "a.txt", body: "5"})), CommitOptions{Branch: "runner/locked"})
	if !errors.Is(err, ErrBranchLocked) {
		t.Fatalf("err = %v, want ErrBranchLocked", err)
	}
	if branchExists(repo, "runner/locked") {
		t.Error("branch created despite the lock")
	}
}
