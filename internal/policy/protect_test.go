package policy

import (
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/runner-dev/runner/internal/wildmatch"
)

// On names no file system spells differently, Protection.Match agrees with
// wildmatch.MatchPath, the .gitignore rules the globs are documented by.
func TestProtectionMatchAgreesWithMatchPath(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	pick := func(xs ...string) string { return xs[rng.IntN(len(xs))] }
	for range 20000 {
		var pat []string
		for range 1 + rng.IntN(4) {
			pat = append(pat, pick("a", "b", "*", "**", "?", "[ab]", "a*", "*b", "x"))
		}
		glob := pick("", "/") + strings.Join(pat, "/") + pick("", "", "/")
		var p []string
		for range 1 + rng.IntN(5) {
			p = append(p, pick("a", "b", "ab", "ba", "x"))
		}
		path := strings.Join(p, "/")
		want := wildmatch.MatchPath(glob, path)
		if _, got := NewProtection([]string{glob}).Match(path); got != want {
			t.Fatalf("Match(%q) with glob %q = %v, MatchPath = %v", path, glob, got, want)
		}
	}
}

// Partial marks the directories at or above what a glob could match.
func TestProtectionPartial(t *testing.T) {
	defaults := NewProtection(DefaultProtected)
	custom := NewProtection([]string{"**/deep/x", "*/secrets/**", "a/**/b"})
	tests := []struct {
		p    *Protection
		dir  string
		glob string // "" when no glob could match below it
	}{
		{defaults, ".github", ".github/workflows/**"},
		{defaults, ".github/workflows", ".github/workflows/**"},
		{defaults, ".GitHub", ".github/workflows/**"},
		{defaults, "GITHUB~1", ".github/workflows/**"},
		{defaults, ".vscode", ".vscode/tasks.json"},
		{defaults, ".devcontainer", ".devcontainer/**"},
		{defaults, "docs", ""},
		{defaults, "src/lib", ""},
		{defaults, ".github/ISSUE_TEMPLATE", ""},
		{custom, "src/deep", "**/deep/x"},
		{custom, "src/other", ""},
		{custom, "any", "*/secrets/**"},
		{custom, "any/secrets", "*/secrets/**"},
		{custom, "any/other", ""},
		{custom, "a/x/y", "a/**/b"},
	}
	for _, tt := range tests {
		s := tt.p.Start()
		for part := range strings.SplitSeq(tt.dir, "/") {
			s = tt.p.Step(s, part)
		}
		glob, ok := tt.p.Partial(s)
		if glob != tt.glob || ok != (tt.glob != "") {
			t.Errorf("Partial(%q) = %q, %v; want %q", tt.dir, glob, ok, tt.glob)
		}
	}
}
