package wildmatch

import (
	"errors"
	"testing"
)

func TestMatchPath(t *testing.T) {
	tests := []struct {
		pattern, path string
		want          bool
	}{
		// No slash: the base name, at any depth.
		{".gitmodules", ".gitmodules", true},
		{".gitmodules", "vendor/lib/.gitmodules", true},
		{".gitmodules", ".gitmodules.bak", false},
		{"*.pem", "a/b/key.pem", true},
		{"*.pem", "key.pem/inside", true}, // a directory named key.pem
		{"*.pem", "a/key.pem.txt", false},
		// A slash: from the root only; a leading one only anchors.
		{"/Makefile", "Makefile", true},
		{"/Makefile", "sub/Makefile", false},
		{"docs/*.md", "docs/a.md", true},
		{"docs/*.md", "docs/sub/a.md", false},
		{"docs/*.md", "x/docs/a.md", false},
		// Everything inside a matching directory.
		{".github/workflows/**", ".github/workflows/ci.yml", true},
		{".github/workflows/**", ".github/workflows/sub/x.yml", true},
		{".github/workflows/**", ".github/workflows", false},
		{".github/workflows/**", ".github/workflowsx/ci.yml", false},
		{".github/workflows/**", ".github/ci.yml", false},
		{".github/workflows", ".github/workflows/ci.yml", true},
		{".github/workflows", ".github/workflows", true},
		{".circleci", ".circleci/config.yml", true},
		{"**/secrets/*", "a/b/secrets/x", true},
		{"**/secrets/*", "secrets/x", true},
		// A trailing slash: directories only.
		{"build/", "build/out.o", true},
		{"build/", "src/build/out.o", true},
		{"build/", "build", false},
		{"/build/", "src/build/out.o", false},
		// Escapes and classes.
		{`\!important`, "!important", true},
		{"[ab].txt", "x/b.txt", true},
		{"", "x", false},
		{"/", "x", false},
	}
	for _, tt := range tests {
		if got := MatchPath(tt.pattern, tt.path); got != tt.want {
			t.Errorf("MatchPath(%q, %q) = %v, want %v", tt.pattern, tt.path, got, tt.want)
		}
	}
}

func TestMatchAny(t *testing.T) {
	patterns := []string{".gitmodules", ".github/workflows/**"}
	tests := []struct {
		path string
		want bool
	}{
		{".gitmodules", true},
		{".github/workflows/release.yml", true},
		{".github/CODEOWNERS", false},
		{"src/main.go", false},
	}
	for _, tt := range tests {
		if got := MatchAny(patterns, tt.path); got != tt.want {
			t.Errorf("MatchAny(%q, %q) = %v, want %v", patterns, tt.path, got, tt.want)
		}
	}
	if MatchAny(nil, "x") {
		t.Errorf("MatchAny(nil, x) = true, want false")
	}
}

func TestCheck(t *testing.T) {
	tests := []struct {
		pattern string
		ok      bool
	}{
		{".github/workflows/**", true},
		{"*.pem", true},
		{"[[:alpha:]]x", true},
		{"[]]", true},
		{`a\[b`, true},
		{"build/", true},
		{"", false},
		{"  ", false},
		{"/", false},
		{"!keep", false},
		{"[abc", false},
		{"[[:nope:]]", false},
		{`trailing\`, false},
	}
	for _, tt := range tests {
		err := Check(tt.pattern)
		if got := err == nil; got != tt.ok {
			t.Errorf("Check(%q) = %v, want ok %v", tt.pattern, err, tt.ok)
		}
		if err != nil && !errors.Is(err, ErrBadPattern) {
			t.Errorf("Check(%q) = %v, want it to wrap ErrBadPattern", tt.pattern, err)
		}
	}
}
