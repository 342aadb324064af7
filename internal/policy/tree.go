package policy

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
)

// EntryKind is the kind of a tree entry that is not a directory.
type EntryKind uint8

// The kinds of Entry.
const (
	File EntryKind = iota + 1
	Symlink
	Gitlink
)

// Entry is a file, symlink or submodule (gitlink) of a tree.
type Entry struct {
	Kind EntryKind
	// Target is a symlink's target, as stored.
	Target string
}

// Exposure says why changing a path of a tree changes what a checkout of
// it shows at protected paths.
type Exposure struct {
	// Glob is the protected-path glob concerned.
	Glob string
	// Shown is the protected path a checkout shows, through symlinks, for
	// this entry (or below this symlink); empty when it is the entry's own
	// path.
	Shown string
	// Placed is set for a symlink or submodule placed at or above paths
	// Glob could match, whatever it points to.
	Placed bool
}

// ErrTooManyPaths is returned by Exposed when a tree's symlinks make more
// paths to follow than it checks.
var ErrTooManyPaths = errors.New("the symlinks make too many paths to check for protected paths")

// Limits of Exposed: symlinks followed in one lookup (Linux's), and
// (directory, glob state) pairs visited in one tree.
const (
	maxSymlinkHops = 40
	maxVisits      = 1 << 20
)

// Exposed returns the paths of tree whose change changes what a checkout of
// tree shows at a protected path. A checkout follows symlinks, so besides
// the paths p.Match protects these are:
//
//   - an entry a checkout also shows at a protected path, through symlinks
//     inside the tree ("ci/build.yml" when ".github/workflows" links to
//     "../ci");
//   - a symlink through which a checkout shows a protected path ("docs"
//     linking to a directory holding a CODEOWNERS);
//   - a symlink or submodule placed where a glob has matched leading
//     components and could match more below (see Partial), whatever its
//     target: ".github" or ".github/workflows" for ".github/workflows/**",
//     even when the target is outside the tree, dangling or a loop.
//
// tree maps slash-separated paths to the entries that are not directories.
// Symlinks are resolved within tree as a file system would, at most 40 at a
// time; a target outside the tree shows nothing of it. A tree whose
// symlinks make more than a million (directory, glob state) pairs to visit
// is refused with ErrTooManyPaths.
func (p *Protection) Exposed(ctx context.Context, tree map[string]Entry) (map[string]Exposure, error) {
	out := make(map[string]Exposure)
	if p.Empty() {
		return out, nil
	}
	w := &treeWalk{p: p, dirs: indexDirs(tree), out: out, nodes: map[string]int{}}
	w.node("", p.Start(), "")
	// The tree as it is first, then through symlinks, one round at a
	// time: an entry is reported under its own path when it has one.
	for i := 0; ; w.followLinks() {
		for ; i < len(w.all); i++ {
			if i%1024 == 0 {
				if err := ctx.Err(); err != nil {
					return nil, err
				}
			}
			if len(w.all) > maxVisits {
				return nil, fmt.Errorf("%w: over %d directories to visit", ErrTooManyPaths, maxVisits)
			}
			w.visit(i)
		}
		if len(w.links) == 0 {
			break
		}
	}
	w.blameSymlinks()
	return out, nil
}

// followLinks adds the edges through the symlinks to directories found so
// far.
func (w *treeWalk) followLinks() {
	links := w.links
	w.links = nil
	for _, l := range links {
		to := w.node(l.target, l.state, l.visible)
		w.all[l.from].edges = append(w.all[l.from].edges, walkEdge{to: to, name: l.name, via: l.via})
	}
}

// dirNode is a directory of the tree and what it holds.
type dirNode struct {
	names    []string // sorted
	children map[string]child
	folded   map[string]string // folded name → first name, for lookups
}

type child struct {
	isDir bool
	entry *Entry
	name  *name // spelled out once, for every glob state
}

// named returns c with its name spelled out.
func (c child) named(raw string) child {
	if c.name == nil {
		n := newName(raw)
		c.name = &n
	}
	return c
}

func indexDirs(tree map[string]Entry) map[string]*dirNode {
	dirs := map[string]*dirNode{}
	// get returns the directory d, creating it and linking it into its
	// parent (and so on up) when it is new.
	var get func(d string) *dirNode
	get = func(d string) *dirNode {
		if n := dirs[d]; n != nil {
			return n
		}
		n := &dirNode{children: map[string]child{}}
		dirs[d] = n
		if d != "" {
			parent, name := splitPath(d)
			pd := get(parent)
			c := pd.children[name]
			c.isDir = true
			pd.children[name] = c.named(name)
		}
		return n
	}
	get("")
	for p, e := range tree {
		dir, name := splitPath(p)
		d := get(dir)
		c := d.children[name]
		c.entry = &e
		d.children[name] = c.named(name)
	}
	for _, d := range dirs {
		d.names = make([]string, 0, len(d.children))
		for name := range d.children {
			d.names = append(d.names, name)
		}
		slices.Sort(d.names)
	}
	return dirs
}

// splitPath splits p into its directory ("" at the root) and last name.
func splitPath(p string) (dir, name string) {
	i := strings.LastIndexByte(p, '/')
	if i < 0 {
		return "", p
	}
	return p[:i], p[i+1:]
}

// treeWalk visits (directory, state) pairs from the root, following
// symlinks: a product of the directory graph and the globs' automaton,
// finite however the symlinks loop.
type treeWalk struct {
	p     *Protection
	dirs  map[string]*dirNode
	out   map[string]Exposure
	nodes map[string]int // dir + "\x00" + state key → index in all
	all   []walkNode
	links []pendingLink
}

// pendingLink is a symlink to a directory, not followed yet.
type pendingLink struct {
	from                       int
	name, via, target, visible string
	state                      State
}

type walkNode struct {
	dir     string
	state   State
	visible string // the first path a checkout shows this directory at
	edges   []walkEdge
	// hit is set once a protected entry is known to be reachable: hitRel
	// is its path below the directory, hitGlob the glob.
	hit             bool
	hitRel, hitGlob string
}

type walkEdge struct {
	to   int
	name string // the child's name
	via  string // the symlink's path, for an edge through one
}

func (w *treeWalk) node(dir string, s State, visible string) int {
	key := dir + "\x00" + s.Key()
	if i, ok := w.nodes[key]; ok {
		return i
	}
	w.all = append(w.all, walkNode{dir: dir, state: s, visible: visible})
	w.nodes[key] = len(w.all) - 1
	return len(w.all) - 1
}

func join(dir, name string) string {
	if dir == "" {
		return name
	}
	return dir + "/" + name
}

func (w *treeWalk) expose(p string, e Exposure) {
	if _, ok := w.out[p]; !ok {
		w.out[p] = e
	}
}

func (w *treeWalk) hit(i int, rel, glob string) {
	if n := &w.all[i]; !n.hit {
		n.hit, n.hitRel, n.hitGlob = true, rel, glob
	}
}

// visit looks at the children of node i.
func (w *treeWalk) visit(i int) {
	n := w.all[i]
	d := w.dirs[n.dir]
	if d == nil {
		return
	}
	for _, name := range d.names {
		c := d.children[name]
		s := w.p.stepWith(n.state, c.name)
		if s.Dead() {
			continue
		}
		real, visible := join(n.dir, name), join(n.visible, name)
		shown := visible
		if shown == real {
			shown = ""
		}
		if c.isDir {
			to := w.node(real, s, visible)
			w.all[i].edges = append(w.all[i].edges, walkEdge{to: to, name: name})
		}
		if c.entry == nil {
			continue
		}
		switch c.entry.Kind {
		case File:
			if glob, ok := w.p.Accepts(s, false); ok {
				w.expose(real, Exposure{Glob: glob, Shown: shown})
				w.hit(i, name, glob)
			}
		case Gitlink:
			if glob, ok := w.p.Accepts(s, true); ok {
				w.expose(real, Exposure{Glob: glob, Shown: shown})
				w.hit(i, name, glob)
			} else if glob, ok := w.p.Partial(s); ok {
				w.expose(real, Exposure{Glob: glob, Shown: shown, Placed: true})
			}
		case Symlink:
			if glob, ok := w.p.Accepts(s, true); ok {
				w.expose(real, Exposure{Glob: glob, Shown: shown})
				w.hit(i, name, glob)
			} else if glob, ok := w.p.Partial(s); ok {
				w.expose(real, Exposure{Glob: glob, Shown: shown, Placed: true})
			}
			target, kind := w.resolve(n.dir, c.entry.Target)
			switch kind {
			case 0:
			case kindDir:
				w.links = append(w.links, pendingLink{from: i, name: name, via: real, target: target, visible: visible, state: s})
			default:
				if glob, ok := w.p.Accepts(s, kind == Gitlink); ok {
					w.expose(target, Exposure{Glob: glob, Shown: visible})
					w.expose(real, Exposure{Glob: glob, Shown: visible})
					w.hit(i, name, glob)
				}
			}
		}
	}
}

// kindDir is what resolve returns for a directory of the tree.
const kindDir EntryKind = 255

// resolve follows target, the target of a symlink in directory dir, within
// the tree. It returns the path reached and its kind (kindDir for a
// directory), or kind 0 when the target leaves the tree, is missing or
// loops. A backslash counts as a separator, as on Windows; a name is
// looked up as written, then as a case-insensitive file system would.
func (w *treeWalk) resolve(dir, target string) (string, EntryKind) {
	target = strings.ReplaceAll(target, `\`, "/")
	if target == "" || strings.HasPrefix(target, "/") || len(target) > 1 && target[1] == ':' {
		return "", 0
	}
	var cur []string
	if dir != "" {
		cur = strings.Split(dir, "/")
	}
	parts := strings.Split(target, "/")
	hops := 1
	for len(parts) > 0 {
		part := parts[0]
		parts = parts[1:]
		switch part {
		case "", ".":
			continue
		case "..":
			if len(cur) == 0 {
				return "", 0
			}
			cur = cur[:len(cur)-1]
			continue
		}
		d := w.dirs[strings.Join(cur, "/")]
		if d == nil {
			return "", 0
		}
		name, ok := d.lookup(part)
		if !ok {
			return "", 0
		}
		c := d.children[name]
		if c.entry == nil {
			cur = append(cur, name)
			continue
		}
		switch c.entry.Kind {
		case Symlink:
			if hops++; hops > maxSymlinkHops || strings.HasPrefix(c.entry.Target, "/") {
				return "", 0
			}
			next := strings.Split(strings.ReplaceAll(c.entry.Target, `\`, "/"), "/")
			parts = append(next, parts...)
		default:
			if slices.ContainsFunc(parts, func(s string) bool { return s != "" && s != "." }) {
				return "", 0 // below a file, or inside a submodule this tree does not hold
			}
			return strings.Join(append(cur, name), "/"), c.entry.Kind
		}
	}
	return strings.Join(cur, "/"), kindDir
}

// lookup finds a child by name, or by the name a case-insensitive file
// system would take it for.
func (d *dirNode) lookup(name string) (string, bool) {
	if _, ok := d.children[name]; ok {
		return name, true
	}
	if d.folded == nil {
		d.folded = make(map[string]string, len(d.names))
		for _, n := range d.names {
			if f := foldName(n); d.folded[f] == "" {
				d.folded[f] = n
			}
		}
	}
	n, ok := d.folded[foldName(name)]
	return n, ok
}

// blameSymlinks exposes every symlink through which the walk reached a
// protected entry: walking the edges backwards from the directories that
// hold one.
func (w *treeWalk) blameSymlinks() {
	type back struct {
		from int
		e    walkEdge
	}
	into := make([][]back, len(w.all))
	var queue []int
	for i, n := range w.all {
		for _, e := range n.edges {
			into[e.to] = append(into[e.to], back{from: i, e: e})
		}
		if n.hit {
			queue = append(queue, i)
		}
	}
	for len(queue) > 0 {
		v := queue[0]
		queue = queue[1:]
		to := w.all[v]
		for _, b := range into[v] {
			if b.e.via != "" {
				shown := join(join(w.all[b.from].visible, b.e.name), to.hitRel)
				w.expose(b.e.via, Exposure{Glob: to.hitGlob, Shown: shown})
			}
			if !w.all[b.from].hit {
				w.hit(b.from, b.e.name+"/"+to.hitRel, to.hitGlob)
				queue = append(queue, b.from)
			}
		}
	}
}
