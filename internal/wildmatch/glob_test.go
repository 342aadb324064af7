package wildmatch

import (
	"strings"
	"testing"
)

func TestMatch(t *testing.T) {
	tests := []struct {
		pattern, text string
		want          bool
	}{
		{"foo", "foo", true},
		{"foo", "bar", false},
		{"", "", true},
		{"???", "abc", true},
		{"??", "abc", false},
		{"*", "abc", true},
		{"*", "a/b", false},
		{"f*", "foo", true},
		{"*f", "foo", false},
		{"*foo*", "foo", true},
		{"*ob*a*r*", "foobar", true},
		{"a/*", "a/b", true},
		{"a/*", "a/b/c", false},
		{"a?b", "a/b", false},
		{"a[/]b", "a/b", false},
		{"**", "a/b/c", true},
		{"**/c", "c", true},
		{"**/c", "a/b/c", true},
		{"a/**", "a/b/c", true},
		{"a/**", "a", false},
		{"a/**/b", "a/b", true},
		{"a/**/b", "a/x/y/b", true},
		{"a/**/b", "a/xb", false},
		{"a**b", "axxb", true},
		{"a**b", "a/b", false},
		{`**\/x`, "a/x", true}, // git: an escaped '/' still bounds "**"
		{`**\/x`, "x", false},
		{"a/**/**/b", "a/b", true},
		{"a/**/**/b", "a/x/y/b", true},
		{`\*`, "*", true},
		{`\*`, "x", false},
		{`a\`, "a", false},
		{"[abc]", "b", true},
		{"[!abc]", "b", false},
		{"[^abc]", "d", true},
		{"[a-c]", "b", true},
		{"[c-a]", "b", false},
		{"[]]", "]", true},
		{"[]-]", "-", true},
		{"[a-]", "-", true},
		{`[\]]`, "]", true},
		{"[[:alpha:]]", "q", true},
		{"[[:alpha:]]", "1", false},
		{"[[:digit:]x]", "x", true},
		{"[[:nope:]]", "n", false},
		{"[abc", "a", false},
		{"[[:alpha:", "a", false},
		{"[[]", "[", true},
		{"[[:]", ":", true},
		{strings.Repeat("*a", 30) + "b", strings.Repeat("a", 200), false},
	}
	for _, tt := range tests {
		if got := Match(tt.pattern, tt.text); got != tt.want {
			t.Errorf("Match(%q, %q) = %v, want %v", tt.pattern, tt.text, got, tt.want)
		}
	}
}
