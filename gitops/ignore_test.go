package gitops

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// TestIgnoreRulesAgreeWithGit builds each case as a real repository and
// compares the paths `git add -A` stages with the paths ignoreRules keeps.
func TestIgnoreRulesAgreeWithGit(t *testing.T) {
	tests := []struct {
		name    string
		exclude string
		ignores map[string]string // directory -> .gitignore content
		paths   []string
	}{
		{
			name:    "classes and escapes",
			ignores: map[string]string{"": "[!a]*.c\n[^b]x\n[a-c]r\n[]]q\n[!]]w\n[[:upper:]]*.u\n[[:bogus:]]\n\\*star\na\\?\n*.[oa]\n[a-]m\n[\\]]e\n[[:digit:][:alpha:]]z\n"},
			paths: []string{
				"a.c", "b.c", "zz.c", "ax", "bx", "cx", "ar", "dr", "]q", "aq", "]w", "kw", "A.u", "a.u", "[[:bogus:]]",
				"*star", "xstar", "a?", "ab", "x.o", "x.a", "x.c2", "-m", "am", "bm", "]e", "1z", "Qz", "-z",
			},
		},
		{
			name:    "double stars",
			ignores: map[string]string{"": "a/**/b\n**/deep\n/**/top\nabc/**\n!abc/keep\nx**y\nsrc/**/*.gen\n**\n!**/\n!*.keep\n"},
			paths:   []string{"a/b", "a/x/b", "a/x/y/b", "deep", "q/deep", "q/r/deep/f", "top", "z/top", "abc/keep", "abc/k", "abc/d/keep", "xy", "xzy", "x/y", "src/a.gen", "src/q/r/b.gen", "other.keep", "o/t.keep"},
		},
		{
			name:    "directories and anchors",
			ignores: map[string]string{"": "logs/\n/build\ndoc/*.txt\n/nested/dir/\ntmp/\n!tmp/keep\n", "nested": "!dir/\nlocal/\n", "deep/er": "/anchored\nfree\n"},
			paths: []string{
				"logs", "app/logs/x", "build/x", "src/build/x", "doc/a.txt", "doc/sub/b.txt", "nested/dir/f", "nested/other/dir/f",
				"nested/local/f", "tmp/keep", "tmp/x", "deep/er/anchored", "deep/er/sub/anchored", "deep/er/sub/free", "anchored", "free",
			},
		},
		{
			name:    "negation cannot escape an excluded parent",
			ignores: map[string]string{"": "*.log\n!important/\nout/\n!out/keep.txt\ncache/*\n!cache/keep\n", "out": "!*\n"},
			paths:   []string{"a.log", "important/x.log", "important/y.txt", "out/keep.txt", "out/x", "cache/keep", "cache/x", "cache/sub/keep"},
		},
		{
			name:    "precedence of deeper files and info/exclude",
			exclude: "*.secret\n!keep.me\n*.me\n",
			ignores: map[string]string{"": "!*.secret\n*.txt\n", "a": "!*.txt\n", "a/b": "*.txt\n"},
			paths:   []string{"x.secret", "x.txt", "a/x.txt", "a/b/x.txt", "a/b/c/x.txt", "keep.me", "other.me"},
		},
		{
			// Star-heavy patterns (small enough for git's own matcher),
			// "**" runs, escaped slashes and classes after stars.
			name: "wildcard corpus",
			ignores: map[string]string{
				"":    "*a*a*a*b\na*a*a*a*c\n[!x]*[!y]*?z\n**/**/deep\nq/**/**/r\n**\\/esc\n*[[:digit:]]*[[:upper:]]\nw**x\n/**/top/**/*.t\n",
				"sub": "**/*a?a*\n!keep*\n*/*/n\n",
			},
			paths: []string{
				"aaab", "xaxaxab", "aab", "aaaac", "aaac", "abz", "xyz", "axz", "deep", "u/v/deep", "q/r", "q/s/t/r", "esc", "d/esc", "d/e/esc",
				"x1Y", "x1y", "wzzx", "w/x", "top/a.t", "p/top/b/c.t", "sub/zaka", "sub/keepaxa", "sub/m/o/n", "sub/m/n", "sub/zz",
			},
		},
		{
			name:    "whitespace comments and bom",
			ignores: map[string]string{"": "\xef\xbb\xbfbom.txt\n# comment.txt\n\\#hash.txt\ntrail.txt  \nspace\\ .txt\n  lead.txt\r\n\n!\n/\n\\!bang.txt\n"},
			paths:   []string{"bom.txt", "# comment.txt", "#hash.txt", "trail.txt", "space .txt", "  lead.txt", "lead.txt", "!bang.txt", "x"},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dir := filepath.Join(t.TempDir(), "w")
			gitBounded(t, t.TempDir(), "init", "-q", dir)
			files := make(map[string]file)
			all := slices.Clone(tt.paths)
			for d, content := range tt.ignores {
				p := filepath.ToSlash(filepath.Join(d, ".gitignore"))
				files[p] = file{content: content}
				all = append(all, p)
			}
			for _, p := range tt.paths {
				files[p] = file{content: p}
			}
			writeFiles(t, dir, files)
			if tt.exclude != "" {
				if err := os.WriteFile(filepath.Join(dir, ".git", "info", "exclude"), []byte(tt.exclude), 0o644); err != nil {
					t.Fatal(err)
				}
			}
			gitBounded(t, dir, "add", "-A")
			staged := strings.Split(gitBounded(t, dir, "-c", "core.quotePath=false", "ls-files"), "\n")

			ignoreFiles := make(map[string][]byte)
			for d, content := range tt.ignores {
				ignoreFiles[d] = []byte(content)
			}
			ig, err := newIgnoreRules([]byte(tt.exclude), ignoreFiles)
			if err != nil {
				t.Fatal(err)
			}
			var kept []string
			for _, p := range all {
				if !ig.ignored(p) {
					kept = append(kept, p)
				}
			}
			slices.Sort(kept)
			slices.Sort(staged)
			if !slices.Equal(kept, staged) {
				t.Errorf("kept by ignoreRules:\n%q\nstaged by git add -A:\n%q", kept, staged)
			}
		})
	}
}

func TestParseIgnore(t *testing.T) {
	rules := parseIgnore([]byte("\xef\xbb\xbf*.o\r\n# c\n\n!keep/\n/anchored\na/b/\ntrail  \nesc\\ \n!\n"))
	want := []ignoreRule{
		{pattern: "*.o", basename: true, line: 1},
		{pattern: "keep", negate: true, dirOnly: true, basename: true, line: 4},
		{pattern: "anchored", line: 5},
		{pattern: "a/b", dirOnly: true, line: 6},
		{pattern: "trail", basename: true, line: 7},
		{pattern: `esc\ `, basename: true, line: 8},
	}
	if !slices.Equal(rules, want) {
		t.Errorf("parseIgnore:\n got %+v\nwant %+v", rules, want)
	}
}

// Rules added after paths were evaluated give the verdicts of rules built
// at once: the cache of excluded directories forgets what they can change.
func TestIgnoreRulesAddedLater(t *testing.T) {
	files := map[string][]byte{"": []byte("build/\n!keep/\n"), "a": []byte("x/\n!build/\n"), "a/b": []byte("*.o\n!build/\n")}
	paths := []string{"build/f", "a/build/f", "a/x/f", "a/b/x/f", "a/b/f.o", "a/b/build/f", "c/build/f", "a/c/x/f"}
	all, err := newIgnoreRules(nil, files)
	if err != nil {
		t.Fatal(err)
	}
	later, err := newIgnoreRules(nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	for _, d := range []string{"a/b", "", "a"} {
		for _, p := range paths {
			later.ignored(p) // fill the cache with verdicts about to change
		}
		if err := later.addFile(d, files[d]); err != nil {
			t.Fatal(err)
		}
	}
	for _, p := range paths {
		if got, want := later.ignored(p), all.ignored(p); got != want {
			t.Errorf("ignored(%q) = %v with rules added later, %v with rules built at once", p, got, want)
		}
	}
}
