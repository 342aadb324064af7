package wildmatch

import (
	"math/rand/v2"
	"strings"
	"testing"
)

// TestCompileAgreesWithReference compares the automaton with the
// recursive matcher it replaced on random patterns and texts over an
// alphabet that exercises every rule (stars, "**" at and off directory
// boundaries, classes, escapes, slashes).
func TestCompileAgreesWithReference(t *testing.T) {
	pieces := []string{"a", "b", "/", "*", "**", "?", "[ab]", "[!a]", "[]a]", "[a-", "[[:alpha:]]", `\*`, `\`, "**/", "/**", ".", "["}
	texts := []string{"a", "b", "/", ".", "*", "]", "-"}
	rng := rand.New(rand.NewPCG(1, 2))
	for range 20000 {
		var pb, tb strings.Builder
		for range rng.IntN(7) {
			pb.WriteString(pieces[rng.IntN(len(pieces))])
		}
		for range rng.IntN(9) {
			tb.WriteString(texts[rng.IntN(len(texts))])
		}
		pattern, text := pb.String(), tb.String()
		if got, want := Match(pattern, text), refMatch(pattern, text); got != want {
			t.Errorf("Match(%q, %q) = %v, reference says %v", pattern, text, got, want)
		}
	}
}

// FuzzMatch checks the automaton against the reference on any input.
func FuzzMatch(f *testing.F) {
	for _, s := range [][2]string{{"a/**/b", "a/x/b"}, {"*[!a]?", "xyz"}, {`**\/x`, "a/x"}, {"[[:digit:]-z]", "-"}} {
		f.Add(s[0], s[1])
	}
	f.Fuzz(func(t *testing.T, pattern, text string) {
		if len(pattern) > 40 || len(text) > 40 {
			return
		}
		if got, want := Match(pattern, text), refMatch(pattern, text); got != want {
			t.Errorf("Match(%q, %q) = %v, reference says %v", pattern, text, got, want)
		}
	})
}

// hostile are patterns that make a backtracking matcher explode, with a
// text that almost matches each of them.
var hostile = []struct {
	pattern, text string
	want          bool
}{
	{strings.Repeat("*a", 60) + "b", strings.Repeat("a", 250), false},
	{strings.Repeat("*a", 60), strings.Repeat("a", 250), true},
	{strings.Repeat("**/a", 40) + "/b", strings.Repeat("a/", 120) + "c", false},
	{strings.Repeat("**/a", 40) + "/b", strings.Repeat("a/", 120) + "b", true},
	{strings.Repeat("*?", 100) + "x", strings.Repeat("y", 300), false},
	{strings.Repeat("[!x]*", 80) + "x", strings.Repeat("y", 300), false},
	{strings.Repeat("a*", 300) + "z", strings.Repeat("a", 900), false},
	{"**/" + strings.Repeat("*a", 50) + "b/**", strings.Repeat("a", 100) + "/" + strings.Repeat("a", 100), false},
}

// TestMatchCostIsBounded asserts the work done on hostile patterns: at
// most one step per text byte and state word (plus one), whatever the
// number of stars.
func TestMatchCostIsBounded(t *testing.T) {
	for _, h := range hostile {
		p := Compile(h.pattern)
		var steps int
		got := p.MatchCounting(h.text, &steps)
		if got != h.want {
			t.Errorf("Match(%.30q…, %.30q…) = %v, want %v", h.pattern, h.text, got, h.want)
		}
		words := len(h.pattern)/64 + 1
		if limit := len(h.text)*words + 1; steps > limit {
			t.Errorf("Match(%.30q…) took %d steps on %d bytes, want at most %d", h.pattern, steps, len(h.text), limit)
		}
	}
}

func TestCompiledPatternKinds(t *testing.T) {
	tests := []struct {
		pattern string
		kind    patternKind
	}{
		{"abc", patternLiteral},
		{`a\*c`, patternLiteral},
		{"*.log", patternSuffix},
		{"*", patternSuffix},
		{"a*", patternGeneral},
		{"[abc", patternNever},
		{`abc\`, patternNever},
		{"[[:nope:]]", patternNever},
	}
	for _, tt := range tests {
		if got := Compile(tt.pattern).kind; got != tt.kind {
			t.Errorf("Compile(%q).kind = %d, want %d", tt.pattern, got, tt.kind)
		}
	}
}

// BenchmarkHostile compares the automaton with the recursive matcher it
// replaced on the hostile patterns, as a ratio within one run.
func BenchmarkHostile(b *testing.B) {
	h := hostile[0]
	b.Run("compiled", func(b *testing.B) {
		p := Compile(h.pattern)
		for b.Loop() {
			p.Match(h.text)
		}
	})
	b.Run("recursive", func(b *testing.B) {
		for b.Loop() {
			refMatch(h.pattern, h.text)
		}
	})
}

// BenchmarkCompile measures compiling a typical ignore pattern.
func BenchmarkCompile(b *testing.B) {
	b.ReportAllocs()
	for b.Loop() {
		Compile("src/**/gen-*.[ch]")
	}
}
