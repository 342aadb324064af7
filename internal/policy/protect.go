package policy

import (
	"slices"
	"strings"

	"github.com/runner-dev/runner/internal/wildmatch"
)

// Protection is a list of protected-path globs compiled for matching a path
// under every name a file system may take it for. Build it with
// NewProtection; it is safe for concurrent use.
//
// Globs follow .gitignore (see wildmatch.MatchPath): a glob without '/'
// (but a trailing one) matches a name at any depth, one with '/' matches
// from the root, "**" spans directories, a trailing '/' matches
// directories only, and a matching directory protects everything inside
// it. A path component also matches a glob's component when a case-
// insensitive or Windows file system would take it for one (see foldName
// and shortNameBase): ".GitHub/Workflows/ci.yml", ".github./workflows/ci.yml"
// and "GITHUB~1/workflows/ci.yml" are all protected by
// ".github/workflows/**"; a backslash separates components, as on Windows.
type Protection struct {
	globs []glob
}

// glob is one compiled pattern: its components, with a leading "**" added
// to a pattern that matches at any depth.
type glob struct {
	text    string
	parts   []string
	dirOnly bool
	// folded are the parts as foldText spells them; literal whether a
	// part has no wildcard; seeds the start of the 8.3 short name Windows
	// would give each literal part.
	folded, seeds []string
	literal       []bool
}

// NewProtection compiles globs; an empty list protects nothing. Malformed
// globs (see CheckPattern) are kept: a malformed class matches nothing.
func NewProtection(globs []string) *Protection {
	p := &Protection{}
	for _, text := range globs {
		pat, dirOnly := strings.CutSuffix(text, "/")
		anchored := strings.Contains(pat, "/")
		pat = strings.TrimPrefix(pat, "/")
		if pat == "" {
			continue
		}
		var parts []string
		if !anchored {
			parts = []string{"**"}
		}
		for part := range strings.SplitSeq(pat, "/") {
			if part == "**" && len(parts) > 0 && parts[len(parts)-1] == "**" {
				continue // "**/**" is "**"
			}
			parts = append(parts, part)
		}
		g := glob{text: text, parts: parts, dirOnly: dirOnly}
		for _, part := range parts {
			f := foldText(part)
			g.folded = append(g.folded, f)
			literal := !strings.ContainsAny(part, `*?[\`)
			seed := ""
			if literal {
				seed = shortNameSeed(f)
			}
			g.seeds = append(g.seeds, seed)
			g.literal = append(g.literal, literal)
		}
		p.globs = append(p.globs, g)
	}
	return p
}

// Empty reports whether p protects nothing.
func (p *Protection) Empty() bool { return p == nil || len(p.globs) == 0 }

// Match reports whether the slash-separated workspace path rel, or a
// directory holding it, is protected, and by which glob. rel names a file:
// a glob ending in '/' matches it only through a directory holding it.
func (p *Protection) Match(rel string) (glob string, ok bool) {
	s := p.Start()
	for part := range strings.SplitSeq(rel, "/") {
		if s = p.Step(s, part); s.Dead() {
			return "", false
		}
	}
	return p.Accepts(s, false)
}

// State is where a path's components have led the globs: a sorted set of
// (glob, position) pairs. Position len(parts) means the glob matched the
// last component; len(parts)+1 that it matched a directory above it.
type State struct{ pos []uint32 }

const posBits = 16

func pair(g, i int) uint32 { return uint32(g)<<posBits | uint32(i) }

func unpair(v uint32) (g, i int) { return int(v >> posBits), int(v & (1<<posBits - 1)) }

// Start is the state of the workspace root.
func (p *Protection) Start() State {
	s := State{}
	for g := range p.globs {
		s.pos = append(s.pos, pair(g, 0))
	}
	return s
}

// Dead reports a state from which no glob can match anything.
func (s State) Dead() bool { return len(s.pos) == 0 }

// Key identifies the state, for use in maps.
func (s State) Key() string {
	var b strings.Builder
	for _, v := range s.pos {
		b.WriteByte(byte(v >> 24))
		b.WriteByte(byte(v >> 16))
		b.WriteByte(byte(v >> 8))
		b.WriteByte(byte(v))
	}
	return b.String()
}

// Step returns the state after the path component name. A name holding a
// backslash is also taken as the components it separates, as Windows
// does.
func (p *Protection) Step(s State, name string) State {
	n := newName(name)
	return p.stepWith(s, &n)
}

// stepWith is Step for a component already spelled out by newName.
func (p *Protection) stepWith(s State, n *name) State {
	next := p.stepName(s, n)
	if strings.Contains(n.raw, `\`) {
		t := s
		for piece := range strings.SplitSeq(n.raw, `\`) {
			t = p.step(t, piece)
		}
		next.pos = append(next.pos, t.pos...)
	}
	slices.Sort(next.pos)
	next.pos = slices.Compact(next.pos)
	return next
}

func (p *Protection) step(s State, raw string) State {
	n := newName(raw)
	return p.stepName(s, &n)
}

// stepName is Step for a component already spelled out, without the
// backslash rule.
func (p *Protection) stepName(s State, n *name) State {
	var next State
	for _, v := range s.pos {
		g, i := unpair(v)
		p.globs[g].step(i, n, func(j int) { next.pos = append(next.pos, pair(g, j)) })
	}
	return next
}

// step moves glob g from position i over one component.
func (g *glob) step(i int, n *name, out func(int)) {
	end := len(g.parts)
	switch {
	case i >= end:
		out(end + 1) // inside a matching directory
	case g.parts[i] == "**" && i == end-1:
		out(end) // a trailing "**" matches one component or more
	case g.parts[i] == "**":
		out(i)              // "**" takes this component...
		g.step(i+1, n, out) // ...or none
	case g.matches(i, n):
		out(i + 1)
	}
}

// Accepts reports whether the path that led to s is protected, and by
// which glob. isDir says the path is a directory (or a symlink that may
// stand for one), which a glob ending in '/' matches too.
func (p *Protection) Accepts(s State, isDir bool) (glob string, ok bool) {
	for _, v := range s.pos {
		g, i := unpair(v)
		end := len(p.globs[g].parts)
		if i == end+1 || i == end && (isDir || !p.globs[g].dirOnly) {
			return p.globs[g].text, true
		}
	}
	return "", false
}

// Partial reports whether a glob has matched some leading components of
// the path that led to s and could match a path below it: the path is a
// directory at or above paths a glob could match. A glob that matches at
// any depth does not count until it has matched a component of its own:
// "CODEOWNERS" makes no directory partial, ".github/workflows/**" makes
// ".github" and ".github/workflows" partial, "**/.github/**" makes every
// directory named .github partial.
func (p *Protection) Partial(s State) (glob string, ok bool) {
	for _, v := range s.pos {
		// Position 0 is only ever kept by a leading "**"; any other was
		// reached by matching a component.
		if g, i := unpair(v); i > 0 && i < len(p.globs[g].parts) {
			return p.globs[g].text, true
		}
	}
	return "", false
}

// name is a path component with the spelling a case-insensitive file
// system compares, computed once for every glob.
type name struct {
	raw    string
	folded string
	short  string // the base of an 8.3 short name ("github" for GITHUB~1), or ""
}

func newName(raw string) name {
	return name{raw: raw, folded: foldName(raw), short: shortNameBase(raw)}
}

// matches reports whether the component n matches part i of the glob,
// as written or as some file system would take it.
func (g *glob) matches(i int, n *name) bool {
	if g.literal[i] {
		return n.raw == g.parts[i] || n.folded == g.folded[i] ||
			n.short != "" && strings.HasPrefix(g.seeds[i], n.short)
	}
	return wildmatch.Match(g.parts[i], n.raw) || wildmatch.Match(g.folded[i], n.folded)
}
