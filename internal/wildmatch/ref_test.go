package wildmatch

// refMatch is the recursive matcher with memoised failures that Compile
// replaced (its cost grows with the cube of the text's length): a second
// opinion for the differential tests.
func refMatch(pattern, text string) bool {
	m := wildMatcher{p: pattern, t: text}
	return m.match(0, 0)
}

type wildMatcher struct {
	p, t   string
	failed map[[2]int]bool
}

// try is match with memoised failures; stars call it for every split.
func (m *wildMatcher) try(pi, ti int) bool {
	key := [2]int{pi, ti}
	if m.failed[key] {
		return false
	}
	if m.match(pi, ti) {
		return true
	}
	if m.failed == nil {
		m.failed = make(map[[2]int]bool)
	}
	m.failed[key] = true
	return false
}

func (m *wildMatcher) match(pi, ti int) bool {
	p, t := m.p, m.t
	for pi < len(p) {
		switch p[pi] {
		case '*':
			start := pi
			for pi < len(p) && p[pi] == '*' {
				pi++
			}
			escapedSlash := pi+1 < len(p) && p[pi] == '\\' && p[pi+1] == '/'
			if pi-start >= 2 && (start == 0 || p[start-1] == '/') && (pi == len(p) || p[pi] == '/' || escapedSlash) {
				if pi == len(p) {
					return true
				}
				if escapedSlash {
					// "**\/": any run, then the literal '/'; never no directory.
					for k := ti; k <= len(t); k++ {
						if m.try(pi, k) {
							return true
						}
					}
					return false
				}
				// "**/": no directory, or any run ending with a '/'.
				if m.try(pi+1, ti) {
					return true
				}
				for k := ti; k < len(t); k++ {
					if t[k] == '/' && m.try(pi+1, k+1) {
						return true
					}
				}
				return false
			}
			for k := ti; ; k++ {
				if m.try(pi, k) {
					return true
				}
				if k == len(t) || t[k] == '/' {
					return false
				}
			}
		case '?':
			if ti == len(t) || t[ti] == '/' {
				return false
			}
			pi, ti = pi+1, ti+1
		case '[':
			if ti == len(t) || t[ti] == '/' {
				return false
			}
			ok, next := refMatchClass(p, pi, t[ti])
			if !ok {
				return false
			}
			pi, ti = next, ti+1
		case '\\':
			pi++
			if pi == len(p) {
				return false
			}
			fallthrough
		default:
			if ti == len(t) || t[ti] != p[pi] {
				return false
			}
			pi, ti = pi+1, ti+1
		}
	}
	return ti == len(t)
}

// refMatchClass is the class matcher of refMatch: it matches c against the class opening at p[open] == '['. It
// returns whether c is in the class and the index after the closing ']';
// a malformed class matches nothing.
func refMatchClass(p string, open int, c byte) (ok bool, next int) {
	i := open + 1
	negated := i < len(p) && (p[i] == '!' || p[i] == '^')
	if negated {
		i++
	}
	matched := false
	var prev byte
	hasPrev := false
	for first := true; ; first = false {
		if i >= len(p) {
			return false, 0
		}
		ch := p[i]
		if ch == ']' && !first {
			break
		}
		switch {
		case ch == '\\':
			i++
			if i >= len(p) {
				return false, 0
			}
			ch = p[i]
			matched = matched || c == ch
			prev, hasPrev = ch, true
		case ch == '-' && hasPrev && i+1 < len(p) && p[i+1] != ']':
			i++
			hi := p[i]
			if hi == '\\' {
				i++
				if i >= len(p) {
					return false, 0
				}
				hi = p[i]
			}
			matched = matched || (prev <= c && c <= hi)
			hasPrev = false
		case ch == '[' && i+1 < len(p) && p[i+1] == ':':
			end := i + 2
			for end < len(p) && p[end] != ']' {
				end++
			}
			if end >= len(p) {
				return false, 0
			}
			if end == i+2 || p[end-1] != ':' {
				// Not a [:name:] class: a literal '['.
				matched = matched || c == '['
				prev, hasPrev = '[', true
				break
			}
			in, known := posixClass(p[i+2:end-1], c)
			if !known {
				return false, 0
			}
			matched = matched || in
			i, hasPrev = end, false
		default:
			matched = matched || c == ch
			prev, hasPrev = ch, true
		}
		i++
	}
	return matched != negated, i + 1
}
