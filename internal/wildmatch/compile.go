package wildmatch

import (
	"slices"
	"strings"
)

// Pattern is a glob compiled once for matching many texts with git's
// pathname rules (see Match). Matching never backtracks: the pattern is a
// small automaton whose set of live positions is kept as a bit set and
// advanced one text byte at a time, so the cost is at most
// len(text) × (len(pattern)/64 + 1) word operations whatever the pattern
// (a hostile "*a*a*a…*b" included). A Pattern is immutable and safe for
// concurrent use.
type Pattern struct {
	src  string
	kind patternKind
	lit  string // patternLiteral: the text; patternSuffix: what follows '*'

	// patternGeneral: positions are 0..n, n accepting; bit i of a state
	// word set means "the first i tokens have matched".
	n, words int
	minLen   int  // bytes the text needs at least
	slashes  int  // '/' the text must hold, when !spans
	spans    bool // a "**" that matches '/' makes slashes meaningless
	class    [256]uint8
	adv      []uint64 // per byte class, words each: tokens consuming such a byte
	loopAll  []uint64 // stars staying on a byte other than '/'
	loopDir  []uint64 // "**" staying on '/'
	eps1     []uint64 // stars and "**/" entries: the next position is live too
	eps3     []uint64 // "**/" entries: the position after the '/' is live too
}

type patternKind uint8

const (
	patternNever   patternKind = iota // malformed: matches nothing
	patternLiteral                    // no wildcard: equal texts only
	patternSuffix                     // "*" then a literal
	patternGeneral
)

type tokenKind uint8

const (
	tokLit     tokenKind = iota
	tokAny               // '?'
	tokClass             // "[...]"
	tokStar              // '*', or "**" where it does not span directories
	tokStarAll           // "**" spanning directories (followed by '/' or at the end)
	// tokSkip consumes nothing and opens a "**/": it is followed by a
	// tokStarAll and the '/', which it may also skip (no directory).
	tokSkip
)

type token struct {
	kind tokenKind
	c    byte
	set  *[256]bool
}

// Compile compiles pattern; it accepts anything, as Match does (a
// malformed class or a trailing '\' makes a pattern that matches nothing).
func Compile(pattern string) *Pattern {
	p := &Pattern{src: pattern}
	toks, ok := tokenize(pattern)
	if !ok {
		p.kind = patternNever
		return p
	}
	if lit, ok := literalOf(toks); ok {
		p.kind, p.lit = patternLiteral, lit
		return p
	}
	if len(toks) > 0 && toks[0].kind == tokStar {
		if lit, ok := literalOf(toks[1:]); ok {
			p.kind, p.lit = patternSuffix, lit
			return p
		}
	}
	p.kind = patternGeneral
	p.build(toks)
	return p
}

// String returns the pattern as written.
func (p *Pattern) String() string { return p.src }

// tokenize splits a glob into tokens with git's wildmatch rules; ok is
// false when the pattern can match nothing. Runs of "**/" are merged:
// "**/**/" matches exactly what "**/" does.
func tokenize(p string) (toks []token, ok bool) {
	for i := 0; i < len(p); {
		switch c := p[i]; c {
		case '*':
			start := i
			for i < len(p) && p[i] == '*' {
				i++
			}
			atStart := start == 0 || p[start-1] == '/'
			switch {
			case i-start < 2 || !atStart:
				toks = append(toks, token{kind: tokStar})
			case i == len(p):
				toks = append(toks, token{kind: tokStarAll})
			case p[i] == '/':
				if n := len(toks); n >= 3 && toks[n-3].kind == tokSkip {
					i++ // the previous "**/" already matches this one
					continue
				}
				toks = append(toks, token{kind: tokSkip}, token{kind: tokStarAll})
			case p[i] == '\\' && i+1 < len(p) && p[i+1] == '/':
				toks = append(toks, token{kind: tokStarAll})
			default:
				toks = append(toks, token{kind: tokStar})
			}
		case '?':
			toks = append(toks, token{kind: tokAny})
			i++
		case '[':
			set := new([256]bool)
			var next int
			if *set, next = classSet(p, i); next == 0 {
				return nil, false
			}
			set['/'] = false
			toks = append(toks, token{kind: tokClass, set: set})
			i = next
		case '\\':
			if i+1 == len(p) {
				return nil, false
			}
			toks = append(toks, token{kind: tokLit, c: p[i+1]})
			i += 2
		default:
			toks = append(toks, token{kind: tokLit, c: c})
			i++
		}
	}
	return toks, true
}

// literalOf returns the text toks match when they are all literal bytes.
func literalOf(toks []token) (string, bool) {
	var b strings.Builder
	for _, t := range toks {
		if t.kind != tokLit {
			return "", false
		}
		b.WriteByte(t.c)
	}
	return b.String(), true
}

func (p *Pattern) build(toks []token) {
	p.n = len(toks)
	p.words = (p.n + 1 + 63) / 64
	w := p.words
	newRow := func() []uint64 { return make([]uint64, w) }
	p.loopAll, p.loopDir, p.eps1, p.eps3 = newRow(), newRow(), newRow(), newRow()
	var rows [256][]uint64
	anyRow := newRow() // consumes any byte but '/'
	backing := make([]uint64, 256*w)
	for b := range rows {
		rows[b] = backing[b*w : (b+1)*w : (b+1)*w]
	}
	for i, t := range toks {
		bit, word := uint64(1)<<(i%64), i/64
		switch t.kind {
		case tokLit:
			rows[t.c][word] |= bit
			p.minLen++
			if t.c == '/' {
				p.slashes++
			}
		case tokAny:
			anyRow[word] |= bit
			p.minLen++
		case tokClass:
			for b, in := range t.set {
				if in {
					rows[b][word] |= bit
				}
			}
			p.minLen++
		case tokStar:
			p.loopAll[word] |= bit
			p.eps1[word] |= bit
		case tokStarAll:
			p.loopAll[word] |= bit
			p.loopDir[word] |= bit
			p.eps1[word] |= bit
			p.spans = true
		case tokSkip:
			p.eps1[word] |= bit
			p.eps3[word] |= bit
			p.minLen-- // the '/' that follows is optional
		}
	}
	// Bytes that every token treats alike share one row; patterns have a
	// handful of distinct rows, so a linear search finds them.
	classes := 0
	for b := range rows {
		if b != '/' {
			for k := range anyRow {
				rows[b][k] |= anyRow[k]
			}
		}
		id := -1
		for c := range classes {
			if slices.Equal(p.adv[c*w:(c+1)*w], rows[b]) {
				id = c
				break
			}
		}
		if id < 0 {
			id, classes = classes, classes+1
			p.adv = append(p.adv, rows[b]...)
		}
		p.class[b] = uint8(id)
	}
}

// Match reports whether text matches the pattern.
func (p *Pattern) Match(text string) bool {
	var steps int
	return p.MatchCounting(text, &steps)
}

// MatchCounting is Match that adds to *steps the word operations it
// spent, at most len(text) × (len(pattern)/64 + 1) plus a constant: the
// measure of its cost, for tests and callers that keep a budget.
func (p *Pattern) MatchCounting(text string, steps *int) bool {
	*steps++
	switch p.kind {
	case patternNever:
		return false
	case patternLiteral:
		return text == p.lit
	case patternSuffix:
		rest, ok := strings.CutSuffix(text, p.lit)
		return ok && strings.IndexByte(rest, '/') < 0
	}
	if len(text) < p.minLen || (!p.spans && strings.Count(text, "/") != p.slashes) {
		return false
	}
	if p.words == 1 {
		return p.match1(text, steps)
	}
	return p.matchN(text, steps)
}

// match1 is matchN for a pattern of fewer than 64 tokens.
func (p *Pattern) match1(text string, steps *int) bool {
	adv, loopAll, loopDir, eps1, eps3 := p.adv, p.loopAll[0], p.loopDir[0], p.eps1[0], p.eps3[0]
	closure := func(d uint64) uint64 {
		for {
			x := d | (d&eps1)<<1 | (d&eps3)<<3
			if x == d {
				return d
			}
			d = x
		}
	}
	d := closure(1)
	for i := 0; i < len(text); i++ {
		c := text[i]
		loop := loopAll
		if c == '/' {
			loop = loopDir
		}
		d = closure((d&adv[p.class[c]])<<1 | d&loop)
		if d == 0 {
			*steps += i + 1
			return false
		}
	}
	*steps += len(text)
	return d&(1<<p.n) != 0
}

// matchN simulates the automaton on states of p.words words.
func (p *Pattern) matchN(text string, steps *int) bool {
	w := p.words
	d, x := make([]uint64, w), make([]uint64, w)
	d[0] = 1
	p.closure(d, x)
	for i := 0; i < len(text); i++ {
		c := text[i]
		loop := p.loopAll
		if c == '/' {
			loop = p.loopDir
		}
		adv := p.adv[int(p.class[c])*w : int(p.class[c]+1)*w]
		var carry, live uint64
		for k := range w {
			a := d[k] & adv[k]
			x[k] = a<<1 | carry | d[k]&loop[k]
			carry = a >> 63
		}
		d, x = x, d
		p.closure(d, x)
		for k := range w {
			live |= d[k]
		}
		*steps += w
		if live == 0 {
			return false
		}
	}
	return d[p.n/64]&(1<<(p.n%64)) != 0
}

// closure adds to d the positions its stars make live without a byte;
// scratch is overwritten. Two stars are never adjacent and runs of "**/"
// are merged, so chains of such moves are short: this ends after a few
// rounds.
func (p *Pattern) closure(d, scratch []uint64) {
	for {
		var c1, c3 uint64
		changed := false
		for k := range d {
			a, b := d[k]&p.eps1[k], d[k]&p.eps3[k]
			scratch[k] = d[k] | a<<1 | c1 | b<<3 | c3
			c1, c3 = a>>63, b>>61
			changed = changed || scratch[k] != d[k]
		}
		copy(d, scratch)
		if !changed {
			return
		}
	}
}
