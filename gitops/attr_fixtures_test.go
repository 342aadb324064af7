package gitops

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// attrTreeFixtures are the line-ending cases of TestCommitTreeMatchesGitAddAll:
// each base is cloned by git (which converts on checkout), changed as an
// agent would, and the tree CommitTree records must be the one
// `git add -A` records in that clone.
var attrTreeFixtures = []treeFixture{
	{
		name: "text-auto",
		raw:  true,
		base: map[string]file{
			".gitattributes":   {content: "* text=auto\n"},
			"a.txt":            {content: "a\nb\n"},
			"untouched.txt":    {content: "u\nv\n"},
			"crlf-in-base.txt": {content: "x\r\ny\r\n"},
			"crlf-kept.txt":    {content: "k\r\nl\r\n"},
			"bin.dat":          {content: "a\r\n\x00"},
		},
		change: func(t *testing.T, dir string) {
			writeFiles(t, dir, map[string]file{
				"a.txt":            {content: "a\r\nb\r\nc\r\n"},
				"crlf-in-base.txt": {content: "x\r\ny\r\nz\r\n"},
				"bin.dat":          {content: "a\r\nb\x00"},
				"new.txt":          {content: "n\r\n"},
				"new-bin.dat":      {content: "\x00\r\n"},
				"mixed.txt":        {content: "a\r\nb\nc"},
				"lone-cr.txt":      {content: "a\rb\r\n"},
				"noeol.txt":        {content: "a\r\nb"},
				"only-cr-lf.txt":   {content: "\r\n"},
				"ctrl-z.txt":       {content: "a\r\nb\r\n\x1a"},
				"nonprint.txt":     {content: "\x01\x02\x03\r\n"},
				"ünï/ファイル.txt":     {content: "u\r\n"},
				"empty.txt":        {},
			})
		},
	},
	{
		// The repository that makes every touched file a whole-file
		// rewrite when the commit ignores attributes.
		name: "text-eol-crlf",
		base: map[string]file{
			".gitattributes": {content: "* text eol=crlf\n"},
			"a.cs":           {content: "class A {\n  int x;\n}\n"},
			"b.cs":           {content: "class B {}\n"},
			"c.cs":           {content: "class C {}\n"},
			"noeol.cs":       {content: "x"},
			"run.sh":         {content: "#!/bin/sh\n", mode: 0o755},
		},
		change: func(t *testing.T, dir string) {
			writeFiles(t, dir, map[string]file{
				"a.cs":     {content: "class A {\r\n  int y;\r\n}\r\n"},
				"new.cs":   {content: "class N {}\r\n"},
				"lf.cs":    {content: "class L {}\n"},
				"mixed.cs": {content: "a\r\nb\n"},
			})
			chmod(t, dir, "run.sh", 0o644)
			remove(t, dir, "c.cs")
		},
	},
	{
		name: "per-extension-and-nested",
		base: map[string]file{
			".gitattributes":            {content: "*.bat eol=crlf\n*.png binary\n*.raw -text\n*.sh eol=lf\n*.auto text=auto eol=crlf\n*.legacy crlf\n"},
			"sub/.gitattributes":        {content: "*.raw text\n"},
			"sub/deeper/.gitattributes": {content: "*.raw -text\n*.bat !eol\n"},
			"old.bat":                   {content: "@echo off\n"},
		},
		change: func(t *testing.T, dir string) {
			writeFiles(t, dir, map[string]file{
				"old.bat":            {content: "@echo off\r\nexit\r\n"},
				"new.bat":            {content: "x\r\n"},
				"img.png":            {content: "\x89PNG\r\n\x1a\n"},
				"a.raw":              {content: "a\r\n"},
				"sub/b.raw":          {content: "b\r\n"},
				"sub/deeper/c.raw":   {content: "c\r\n"},
				"sub/deeper/d.bat":   {content: "d\r\n"},
				"x.sh":               {content: "echo\r\n"},
				"y.auto":             {content: "y\r\n"},
				"bin.auto":           {content: "y\r\n\x00"},
				"z.legacy":           {content: "z\r\n"},
				"no-attributes.txt":  {content: "n\r\n"},
				"docs/name with.bat": {content: "s\r\n"},
			})
		},
	},
	{
		// Blobs committed with CRLF before "text" was set: untouched, they
		// stay as they are; touched, they are normalised, as git does.
		name: "unnormalised-base",
		raw:  true,
		base: map[string]file{
			".gitattributes": {content: "*.txt text\n*.crlf text eol=crlf\n"},
			"untouched.txt":  {content: "a\r\nb\r\n"},
			"touched.txt":    {content: "a\r\nb\r\n"},
			"untouched.crlf": {content: "a\r\nb\r\n"},
			"mixed.crlf":     {content: "a\r\nb\n"},
			"touched.crlf":   {content: "a\r\nb\n"},
			"chmod.txt":      {content: "a\r\nb\r\n"},
		},
		change: func(t *testing.T, dir string) {
			writeFiles(t, dir, map[string]file{
				"touched.txt":  {content: "a\r\nb\r\nc\r\n"},
				"touched.crlf": {content: "a\r\nc\r\n"},
			})
			// A new mode makes git hash the content again.
			chmod(t, dir, "chmod.txt", 0o755)
		},
	},
	{
		name: "attributes-changed-by-the-agent",
		base: map[string]file{
			".gitattributes":     {content: "*.txt text\n"},
			"a.txt":              {content: "a\n"},
			"b.md":               {content: "b\n"},
			"sub/.gitattributes": {content: "*.md text\n"},
			"sub/c.md":           {content: "c\n"},
		},
		change: func(t *testing.T, dir string) {
			remove(t, dir, "sub/.gitattributes")
			writeFiles(t, dir, map[string]file{
				".gitattributes":   {content: "*.txt -text\n*.md text eol=crlf\n"},
				"a.txt":            {content: "a\r\n"},
				"new.md":           {content: "n\r\n"},
				"sub/d.md":         {content: "d\r\n"},
				"x/.gitattributes": {content: "[attr]mine text\n*.y mine\n"},
				"x/z.y":            {content: "z\r\n"},
			})
		},
	},
	{
		name: "attributes-deleted-by-the-agent",
		base: map[string]file{
			".gitattributes": {content: "* text eol=crlf\n"},
			"a.txt":          {content: "a\n"},
			"b.txt":          {content: "b\n"},
		},
		change: func(t *testing.T, dir string) {
			remove(t, dir, ".gitattributes")
			writeFiles(t, dir, map[string]file{"a.txt": {content: "a\r\nA\r\n"}, "new.txt": {content: "n\r\n"}})
		},
	},
	{
		name:       "info-attributes-and-macros",
		attributes: "*.info text\n[attr]crlfy text eol=lf\n",
		base: map[string]file{
			".gitattributes": {content: "[attr]crlfy text eol=crlf\n*.c crlfy\n*.h crlfy -text\n*.m binary text\n*.n text binary\n\"spaced name.q\" text\n"},
		},
		change: func(t *testing.T, dir string) {
			writeFiles(t, dir, map[string]file{
				"x.info": {content: "i\r\n"}, "x.c": {content: "c\r\n"}, "x.h": {content: "h\r\n"},
				"x.m": {content: "m\r\n"}, "x.n": {content: "n\r\n"}, "spaced name.q": {content: "q\r\n"},
			})
		},
	},
	{
		name: "large-files",
		base: map[string]file{
			".gitattributes": {content: "*.txt text eol=crlf\n*.auto text=auto\n"},
			"big.txt":        {content: strings.Repeat("line\n", smallBlob/5+1000)},
		},
		change: func(t *testing.T, dir string) {
			writeFiles(t, dir, map[string]file{
				"new.txt":  {content: strings.Repeat("line\r\n", smallBlob/6+1000)},
				"new.auto": {content: strings.Repeat("line\r\n", smallBlob/6+1000)},
				"bin.auto": {content: strings.Repeat("line\r\n", smallBlob/6+1000) + "\x00"},
			})
			appendTo(t, dir, "big.txt", "one more\r\n")
		},
	},
}

func appendTo(t *testing.T, dir, p, s string) {
	t.Helper()
	f, err := os.OpenFile(filepath.Join(dir, p), os.O_APPEND|os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if _, err := f.WriteString(s); err != nil {
		t.Fatal(err)
	}
}
