package gitops

import (
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// treeFixture is a base commit and the changes an agent makes to a clone
// of it.
type treeFixture struct {
	name    string
	base    map[string]file
	exclude string                          // info/exclude of the user's repository
	setup   func(t *testing.T, repo string) // extra base commit content (gitlinks)
	change  func(t *testing.T, dir string)  // applied to the checkout

	// attributes is the info/attributes of the user's repository; raw
	// stores the base blobs byte for byte (newRawRepo).
	attributes string
	raw        bool
}

func remove(t *testing.T, dir string, paths ...string) {
	t.Helper()
	for _, p := range paths {
		if err := os.RemoveAll(filepath.Join(dir, p)); err != nil {
			t.Fatal(err)
		}
	}
}

func chmod(t *testing.T, dir, p string, mode os.FileMode) {
	t.Helper()
	if err := os.Chmod(filepath.Join(dir, p), mode); err != nil {
		t.Fatal(err)
	}
}

func mkdir(t *testing.T, dir, p string) {
	t.Helper()
	if err := os.MkdirAll(filepath.Join(dir, p), 0o755); err != nil {
		t.Fatal(err)
	}
}

func randomBytes(seed uint64, n int) string {
	r := rand.New(rand.NewPCG(seed, seed))
	b := make([]byte, n)
	for i := range b {
		b[i] = byte(r.Uint32())
	}
	return string(b)
}

var treeFixtures = []treeFixture{
	{
		name: "add-modify-delete",
		base: map[string]file{
			"README.md": {content: "hello\n"}, "src/main.go": {content: "package main\n"},
			"src/util/helper.go": {content: "package util\n"}, "docs/a.md": {content: "a\n"},
			"docs/b.md": {content: "b\n"}, "old/x.txt": {content: "x\n"}, "old/deep/y.txt": {content: "y\n"},
		},
		change: func(t *testing.T, dir string) {
			writeFiles(t, dir, map[string]file{
				"README.md": {content: "hello, world\n"}, "src/new/deep/file.go": {content: "package deep\n"},
				"name with spaces.txt": {content: "s\n"}, "ünïcode-ファイル.txt": {content: "u\n"},
				"-dash.txt": {content: "d\n"}, "empty.txt": {},
			})
			remove(t, dir, "docs/a.md", "old")
			mkdir(t, dir, "emptydir/sub")
		},
	},
	{
		name: "modes",
		base: map[string]file{
			"run.sh": {content: "#!/bin/sh\n", mode: 0o755}, "lib.sh": {content: "lib\n"},
			"data.bin": {content: "data\n"}, "same.sh": {content: "same\n", mode: 0o755},
		},
		change: func(t *testing.T, dir string) {
			chmod(t, dir, "lib.sh", 0o755)
			chmod(t, dir, "run.sh", 0o644)
			chmod(t, dir, "data.bin", 0o744)
			writeFiles(t, dir, map[string]file{"tool.sh": {content: "tool\n", mode: 0o750}, "group-x": {content: "g\n", mode: 0o614}})
		},
	},
	{
		name: "symlinks",
		base: map[string]file{
			"target.txt": {content: "t\n"}, "link-to-target": {link: "target.txt"},
			"replaced.txt": {content: "r\n"}, "dir/f": {content: "f\n"}, "retarget": {link: "a"},
		},
		change: func(t *testing.T, dir string) {
			writeFiles(t, dir, map[string]file{
				"dirlink": {link: "dir"}, "dangling": {link: "missing/file"}, "abs": {link: "/etc/passwd"},
				"outside": {link: "../../outside"}, "replaced.txt": {link: "target.txt"},
				"link-to-target": {content: "now a file\n"}, "retarget": {link: "b"},
			})
		},
	},
	{
		name: "nested-gitignore",
		base: map[string]file{".gitignore": {content: "*.log\n"}, "app.go": {content: "app\n"}},
		change: func(t *testing.T, dir string) {
			writeFiles(t, dir, map[string]file{
				".gitignore": {content: "# comment\n*.log\n!important.log\nbuild/\n/rootonly.txt\ncache/*\n!cache/keep\n" +
					"foo/**\n!foo/bar\ntrailing.txt   \n\\#hash.txt\n*.tmp\n!keep/\ndocs/**/*.bak\n[Tt]emp*/\n" +
					"\xef\xbb\xbf-not-a-bom\ncrlf.txt\r\n**/gen/**\nescaped\\ space.txt\n[[:digit:]]*.num\nq?.x\n"},
				"sub/.gitignore":        {content: "!*.log\n/local.txt\nnested-only\n"},
				"sub/deeper/.gitignore": {content: "*.txt\n!keep.txt\n"},
				"a.log":                 {}, "important.log": {}, "build/out.o": {}, "x/build/y.o": {},
				"rootonly.txt": {}, "sub/rootonly.txt": {}, "cache/a": {}, "cache/keep": {},
				"foo/bar": {}, "foo/baz": {}, "foo/sub/bar": {}, "trailing.txt": {}, "#hash.txt": {},
				"t.tmp": {}, "keep/x.tmp": {}, "keep/x.go": {}, "docs/a/b/c.bak": {}, "docs/c.bak": {}, "docs/c.md": {},
				"Temp1/f": {}, "temp2/f": {}, "tmpx/f": {}, "sub/x.log": {}, "sub/local.txt": {}, "sub/q/local.txt": {},
				"sub/nested-only": {}, "sub/q/nested-only": {}, "sub/deeper/a.txt": {}, "sub/deeper/keep.txt": {},
				"sub/deeper/more/b.txt": {}, "crlf.txt": {}, "a/gen/x": {}, "gen/y": {}, "escaped space.txt": {},
				"1.num": {}, "a1.num": {}, "qa.x": {}, "qab.x": {},
			})
		},
	},
	{
		name: "ignored-but-tracked",
		base: map[string]file{
			".gitignore": {content: "*.log\nbuild/\n"}, "debug.log": {content: "old\n"},
			"build/keep.bin": {content: "old\n"}, "build/gone.bin": {content: "gone\n"}, "src.go": {content: "src\n"},
		},
		change: func(t *testing.T, dir string) {
			writeFiles(t, dir, map[string]file{
				"debug.log": {content: "new\n"}, "build/keep.bin": {content: "new\n", mode: 0o755},
				"build/new.bin": {content: "new\n"}, "other.log": {content: "other\n"},
			})
			remove(t, dir, "build/gone.bin")
		},
	},
	{
		name: "gitignore-deleted",
		base: map[string]file{".gitignore": {content: "*.log\n"}, "x.go": {content: "x\n"}},
		change: func(t *testing.T, dir string) {
			remove(t, dir, ".gitignore")
			writeFiles(t, dir, map[string]file{"now-added.log": {content: "l\n"}})
		},
	},
	{
		name: "binary",
		base: map[string]file{"blob.bin": {content: randomBytes(1, 4096)}, "text.txt": {content: "a\nb\n"}},
		change: func(t *testing.T, dir string) {
			writeFiles(t, dir, map[string]file{
				"blob.bin": {content: randomBytes(2, 65536)}, "nul.bin": {content: "a\x00b\x00"},
				"crlf.txt": {content: "a\r\nb\r\n"}, "big.bin": {content: randomBytes(3, 1<<20)},
				"text.txt": {content: "a\nb"}, "copy1.bin": {content: randomBytes(4, 100)}, "copy2.bin": {content: randomBytes(4, 100)},
			})
		},
	},
	{
		name: "file-dir-swaps",
		base: map[string]file{"a": {content: "a\n"}, "c/d.txt": {content: "d\n"}, "c/e.txt": {content: "e\n"}, "l": {link: "c"}},
		change: func(t *testing.T, dir string) {
			remove(t, dir, "a", "c", "l")
			writeFiles(t, dir, map[string]file{"a/b.txt": {content: "b\n"}, "c": {content: "now a file\n"}, "l/inside.txt": {content: "i\n"}})
		},
	},
	{
		name:    "info-exclude",
		base:    map[string]file{"keep.txt": {content: "k\n"}},
		exclude: "# local\n*.secret\nprivate/\n",
		change: func(t *testing.T, dir string) {
			writeFiles(t, dir, map[string]file{"x.secret": {}, "private/key": {}, "public.txt": {content: "p\n"}, "sub/y.secret": {}})
		},
	},
	{
		name: "gitlink-kept",
		base: map[string]file{"main.go": {content: "m\n"}, ".gitmodules": {content: "[submodule \"vendor/mod\"]\n\tpath = vendor/mod\n\turl = https://example.com/mod.git\n"}},
		setup: func(t *testing.T, repo string) {
			gitRun(t, repo, "update-index", "--add", "--cacheinfo", "160000,"+strings.Repeat("ab", 20)+",vendor/mod")
		},
		change: func(t *testing.T, dir string) {
			writeFiles(t, dir, map[string]file{"main.go": {content: "changed\n"}, "vendor/other.txt": {content: "o\n"}})
		},
	},
	{
		name: "everything-deleted",
		base: map[string]file{"a.txt": {content: "a\n"}, "b/c.txt": {content: "c\n"}},
		change: func(t *testing.T, dir string) {
			remove(t, dir, "a.txt", "b")
		},
	},
}
