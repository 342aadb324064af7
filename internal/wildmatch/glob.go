// Package wildmatch matches slash-separated paths against git-style globs:
// git's wildmatch with its pathname rules (Match), and the placement rules
// of .gitignore patterns on top of it (MatchPath).
package wildmatch

// Match reports whether text, a slash-separated path, matches the glob
// pattern with git's pathname rules (wildmatch with WM_PATHNAME):
//
//   - '*' and '?' never match '/'; '?' matches one byte;
//   - "[...]" is a byte class ("[!...]" or "[^...]" negates it; ranges,
//     backslash escapes and [:alpha:]-style classes work) that never
//     matches '/'; an unterminated or unknown class matches nothing;
//   - '\' makes the next byte literal;
//   - "**" between slashes (or at either end) matches any number of
//     directories: "**/x" matches x at any depth, "a/**/b" matches a/b and
//     a/x/y/b, "a/**" everything inside a. Elsewhere "**" is like "*".
//
// It compiles pattern each time; use Compile to match many texts. The cost
// is linear in len(text) × len(pattern) at worst (see Pattern).
func Match(pattern, text string) bool {
	return Compile(pattern).Match(text)
}

// matchClass matches c against the class opening at p[open] == '['. It
// returns whether c is in the class and the index after the closing ']';
// a malformed class matches nothing (next is 0).
func matchClass(p string, open int, c byte) (ok bool, next int) {
	set, next := classSet(p, open)
	if next == 0 {
		return false, 0
	}
	return set[c], next
}

// classSet parses the class opening at p[open] == '[' as git's wildmatch
// does, in one pass, into the set of bytes it matches ('/' included: the
// caller excludes it). next is the index after the closing ']', or 0 for
// a malformed class.
func classSet(p string, open int) (set [256]bool, next int) {
	i := open + 1
	negated := i < len(p) && (p[i] == '!' || p[i] == '^')
	if negated {
		i++
	}
	var prev byte
	hasPrev := false
	for first := true; ; first = false {
		if i >= len(p) {
			return set, 0
		}
		ch := p[i]
		if ch == ']' && !first {
			break
		}
		switch {
		case ch == '\\':
			i++
			if i >= len(p) {
				return set, 0
			}
			ch = p[i]
			set[ch] = true
			prev, hasPrev = ch, true
		case ch == '-' && hasPrev && i+1 < len(p) && p[i+1] != ']':
			i++
			hi := p[i]
			if hi == '\\' {
				i++
				if i >= len(p) {
					return set, 0
				}
				hi = p[i]
			}
			for b := int(prev); b <= int(hi); b++ {
				set[b] = true
			}
			hasPrev = false
		case ch == '[' && i+1 < len(p) && p[i+1] == ':':
			end := i + 2
			for end < len(p) && p[end] != ']' {
				end++
			}
			if end >= len(p) {
				return set, 0
			}
			if end == i+2 || p[end-1] != ':' {
				// Not a [:name:] class: a literal '['.
				set['['] = true
				prev, hasPrev = '[', true
				break
			}
			name := p[i+2 : end-1]
			if _, known := posixClass(name, 0); !known {
				return set, 0
			}
			for b := range 256 {
				if in, _ := posixClass(name, byte(b)); in {
					set[b] = true
				}
			}
			i, hasPrev = end, false
		default:
			set[ch] = true
			prev, hasPrev = ch, true
		}
		i++
	}
	if negated {
		for b := range set {
			set[b] = !set[b]
		}
	}
	return set, i + 1
}

// posixClass reports whether c belongs to the named [:class:], and
// whether the name is known. Classes are ASCII only, like git's.
func posixClass(name string, c byte) (in, known bool) {
	upper := c >= 'A' && c <= 'Z'
	lower := c >= 'a' && c <= 'z'
	digit := c >= '0' && c <= '9'
	switch name {
	case "alnum":
		return upper || lower || digit, true
	case "alpha":
		return upper || lower, true
	case "blank":
		return c == ' ' || c == '\t', true
	case "cntrl":
		return c < 0x20 || c == 0x7f, true
	case "digit":
		return digit, true
	case "graph":
		return c > 0x20 && c < 0x7f, true
	case "lower":
		return lower, true
	case "print":
		return c >= 0x20 && c < 0x7f, true
	case "punct":
		return c > 0x20 && c < 0x7f && !upper && !lower && !digit, true
	case "space":
		return c == ' ' || (c >= '\t' && c <= '\r'), true
	case "upper":
		return upper, true
	case "xdigit":
		return digit || (c >= 'a' && c <= 'f') || (c >= 'A' && c <= 'F'), true
	}
	return false, false
}
