package wildmatch

import (
	"errors"
	"fmt"
	"strings"
)

// ErrBadPattern marks a pattern that Check refuses.
var ErrBadPattern = errors.New("bad glob pattern")

// MatchPath reports whether the slash-separated relative path p, or one of
// the directories holding it, is matched by pattern placed as a line of a
// .gitignore file at the root:
//
//   - a pattern with no '/' but a trailing one is matched against the last
//     component, at any depth: "*.pem" matches "key.pem" and "a/b/key.pem";
//   - any other pattern is matched against the whole path from the root, a
//     leading '/' only anchoring it: "/Makefile" and "docs/*.md" match at
//     the root only;
//   - a trailing '/' matches directories only, that is everything inside a
//     matching directory but not a file of that name;
//   - a path inside a matching directory matches: ".github/workflows" and
//     ".github/workflows/**" both match ".github/workflows/ci.yml".
//
// Negation ("!pattern") has no meaning here; see Check.
func MatchPath(pattern, p string) bool {
	pattern, dirOnly := strings.CutSuffix(pattern, "/")
	anchored := strings.Contains(pattern, "/")
	pattern = strings.TrimPrefix(pattern, "/")
	if pattern == "" {
		return false
	}
	for candidate, isDir := p, false; candidate != ""; isDir = true {
		if isDir || !dirOnly {
			text := candidate
			if !anchored {
				text = candidate[strings.LastIndexByte(candidate, '/')+1:]
			}
			if Match(pattern, text) {
				return true
			}
		}
		i := strings.LastIndexByte(candidate, '/')
		if i < 0 {
			break
		}
		candidate = candidate[:i]
	}
	return false
}

// MatchAny reports whether any of patterns matches p, as MatchPath does.
func MatchAny(patterns []string, p string) bool {
	for _, pat := range patterns {
		if MatchPath(pat, p) {
			return true
		}
	}
	return false
}

// Check reports a pattern that could never be meant: empty, a negation, an
// unterminated or unknown "[...]" class, a trailing escape. The error wraps
// ErrBadPattern. Match itself accepts anything (a malformed class matches
// nothing, as in git); Check is for patterns written by a person.
func Check(pattern string) error {
	bad := func(why string) error { return fmt.Errorf("%w %q: %s", ErrBadPattern, pattern, why) }
	switch body := strings.TrimSuffix(strings.TrimPrefix(pattern, "/"), "/"); {
	case strings.TrimSpace(pattern) == "":
		return bad("empty")
	case body == "":
		return bad("matches nothing")
	case strings.HasPrefix(pattern, "!"):
		return bad(`negation is not supported (write \! for a literal '!')`)
	}
	for i := 0; i < len(pattern); i++ {
		switch pattern[i] {
		case '\\':
			i++
			if i == len(pattern) {
				return bad("ends with an unfinished escape '\\'")
			}
		case '[':
			_, next := matchClass(pattern, i, 0)
			if next == 0 {
				return bad("unterminated or unknown [...] class")
			}
			i = next - 1
		}
	}
	return nil
}
