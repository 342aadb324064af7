package gitops

import (
	"fmt"
	"path"
	"strings"

	"github.com/runner-dev/runner/internal/wildmatch"
)

// Limits git applies when it reads attributes (attr.h): a longer line or a
// larger file is ignored, with a warning.
const (
	attrMaxLine = 2048
	attrMaxFile = 100 << 20
)

// maxAttrRules bounds the rules that can change a path's content (see
// contentAttrs) over all the attribute files of a tree. Every file of the
// tree is matched against them, so the bound keeps a hostile repository or
// workspace from spending the host's CPU; real repositories use a few
// dozen.
const maxAttrRules = 1000

// maxAttrBytes bounds the attribute files read for one tree, for the
// host's memory.
const maxAttrBytes = 16 << 20

// contentAttrs are the attributes that change what git stores or checks
// out for a path (gitattributes(5), "Effects"). Lookups report only these.
var contentAttrs = [...]string{"text", "crlf", "eol", "ident", "filter", "working-tree-encoding"}

type attrState uint8

const (
	attrUnspecified attrState = iota // not mentioned, or "!name"
	attrSet                          // "name"
	attrUnset                        // "-name"
	attrString                       // "name=value"
)

// attrValue is the state of one attribute for one path.
type attrValue struct {
	state attrState
	value string // for attrString
}

func (v attrValue) String() string {
	switch v.state {
	case attrSet:
		return "set"
	case attrUnset:
		return "unset"
	case attrString:
		return v.value
	}
	return "unspecified"
}

// attrAssign is one "name", "-name", "!name" or "name=value" of a line.
type attrAssign struct {
	name string
	val  attrValue
}

// attrRule is one line of an attributes file: a pattern with the states it
// assigns, or the definition of a macro ("[attr]name states...").
type attrRule struct {
	pattern  string             // without a leading '/'; empty for a macro
	basename bool               // no '/' in the pattern: matched against the file name
	literal  bool               // no wildcard in the pattern
	suffix   bool               // "*" and a literal: a basename ending with it
	glob     *wildmatch.Pattern // pattern compiled when first matched
	macro    string             // the name a macro line defines
	assigns  []attrAssign
}

// attrOrigin says where an attributes file was read from. Git reads a blob
// (from the index or a tree) slightly differently from a file of the
// working tree: only the latter has its UTF-8 byte order mark removed, and
// a blob ends at its first NUL byte while a file's line does.
type attrOrigin uint8

const (
	attrFromBlob attrOrigin = iota
	attrFromFile
)

// gitAttributes answers "which content attributes does git give this
// file?" for the files of one tree, as git_check_attr does with git's
// default configuration: no system-wide or per-user attributes file
// (core.attributesFile), the .gitattributes files of the tree at any depth
// (a deeper one overrides a shallower one, a later line an earlier one),
// and optionally $GIT_DIR/info/attributes above them all. Macros (the
// built-in "binary" and those defined in the root .gitattributes or
// info/attributes) are expanded when set.
//
// Only rules that can affect contentAttrs are kept. A gitAttributes is
// not safe for concurrent use.
type gitAttributes struct {
	info   []attrRule
	dirs   map[string][]attrRule // "" is the root
	macros map[string]*attrRule  // the definition in force for each macro
	// relevant are the attributes whose value can change a contentAttrs
	// one: contentAttrs and the macros expanding to them.
	relevant map[string]bool
	nrules   int
	nbytes   int
	known    map[string]attrValue // scratch space of lookup
}

// builtinAttributes is git's built-in macro.
const builtinAttributes = "[attr]binary -diff -merge -text\n"

// newGitAttributes starts the attributes of a tree from its root
// .gitattributes (read as origin says) and info/attributes (nil for
// none); addDir adds the other directories'.
func newGitAttributes(root []byte, origin attrOrigin, info []byte) (*gitAttributes, error) {
	a := &gitAttributes{dirs: make(map[string][]attrRule), macros: make(map[string]*attrRule), known: make(map[string]attrValue)}
	if err := a.count(".gitattributes", root); err != nil {
		return nil, err
	}
	if err := a.count("info/attributes", info); err != nil {
		return nil, err
	}
	builtin := parseAttributes([]byte(builtinAttributes), attrFromBlob, true)
	rootRules := parseAttributes(root, origin, true)
	infoRules := parseAttributes(info, attrFromFile, true)
	// The definition in force is the last one of the highest-priority
	// file: info/attributes, then the root's, then git's own.
	for _, rules := range [][]attrRule{builtin, rootRules, infoRules} {
		for i := range rules {
			if m := rules[i].macro; m != "" {
				a.macros[m] = &rules[i]
			}
		}
	}
	a.relevant = relevantAttrs(builtin, rootRules, infoRules)
	var err error
	if a.info, err = a.keep("info/attributes", infoRules); err != nil {
		return nil, err
	}
	if err := a.addRules("", rootRules); err != nil {
		return nil, err
	}
	return a, nil
}

// relevantAttrs closes contentAttrs over the macros of rules: a macro is
// relevant when its expansion assigns a relevant attribute.
func relevantAttrs(files ...[]attrRule) map[string]bool {
	rel := make(map[string]bool)
	for _, n := range contentAttrs {
		rel[n] = true
	}
	for changed := true; changed; {
		changed = false
		for _, rules := range files {
			for _, r := range rules {
				if r.macro != "" && !rel[r.macro] && r.assignsAny(rel) {
					rel[r.macro], changed = true, true
				}
			}
		}
	}
	return rel
}

func (r *attrRule) assignsAny(names map[string]bool) bool {
	for _, a := range r.assigns {
		if names[a.name] {
			return true
		}
	}
	return false
}

// addDir adds the .gitattributes of directory dir (not the root), read
// as origin says. Macro definitions there are ignored, as git does.
func (a *gitAttributes) addDir(dir string, content []byte, origin attrOrigin) error {
	if err := a.count(dir+"/.gitattributes", content); err != nil {
		return err
	}
	return a.addRules(dir, parseAttributes(content, origin, false))
}

// count enforces maxAttrBytes.
func (a *gitAttributes) count(where string, content []byte) error {
	a.nbytes += len(content)
	if a.nbytes > maxAttrBytes {
		return fmt.Errorf("%s: more than %d MiB of attribute files in the tree: refused to spare the host", where, maxAttrBytes>>20)
	}
	return nil
}

func (a *gitAttributes) addRules(dir string, rules []attrRule) error {
	where := ".gitattributes"
	if dir != "" {
		where = dir + "/.gitattributes"
	}
	kept, err := a.keep(where, rules)
	if err != nil {
		return err
	}
	if len(kept) > 0 {
		a.dirs[dir] = kept
	}
	return nil
}

// keep returns the pattern rules of a file that can change a content
// attribute, and enforces maxAttrRules.
func (a *gitAttributes) keep(where string, rules []attrRule) ([]attrRule, error) {
	var kept []attrRule
	for _, r := range rules {
		if r.macro == "" && r.assignsAny(a.relevant) {
			kept = append(kept, r)
		}
	}
	a.nrules += len(kept)
	if a.nrules > maxAttrRules {
		return nil, fmt.Errorf("%s: more than %d attribute rules about content (%s) in the tree: refused to spare the host", where, maxAttrRules, strings.Join(contentAttrs[:], ", "))
	}
	return kept, nil
}

// empty reports whether no rule can change any file's content attributes.
func (a *gitAttributes) empty() bool { return a == nil || a.nrules == 0 }

// pathAttrs are the content attributes of one file.
type pathAttrs struct {
	text, crlf, eol, ident, filter, encoding attrValue
}

// lookup returns the content attributes of the file p (slash-separated,
// relative to the root), as git_check_attr does: the frames from
// info/attributes down to the root's .gitattributes, each from its last
// line to its first, and in each line from its last state to its first;
// the first value given to an attribute stays, and a macro set to true
// gives its states to those still unknown.
func (a *gitAttributes) lookup(p string) pathAttrs {
	if a.empty() {
		return pathAttrs{}
	}
	clear(a.known)
	base := p[strings.LastIndexByte(p, '/')+1:]
	if a.fill(a.info, "", p, base) {
		return a.result()
	}
	for dir := path.Dir(p); ; dir = path.Dir(dir) {
		if dir == "." {
			dir = ""
		}
		if a.fill(a.dirs[dir], dir, p, base) || dir == "" {
			break
		}
	}
	return a.result()
}

// fill applies the matching rules of one frame and reports whether every
// content attribute is known.
func (a *gitAttributes) fill(rules []attrRule, dir, p, base string) bool {
	for i := len(rules) - 1; i >= 0; i-- {
		if rules[i].matches(dir, p, base) {
			a.fillOne(&rules[i], 0)
			if a.allKnown() {
				return true
			}
		}
	}
	return false
}

// fillOne assigns the states of r not yet known, expanding macros set to
// true. Every attribute is assigned at most once, so the recursion ends;
// depth only guards against a bug.
func (a *gitAttributes) fillOne(r *attrRule, depth int) {
	if depth > len(a.macros)+1 {
		return
	}
	for i := len(r.assigns) - 1; i >= 0; i-- {
		as := r.assigns[i]
		if _, ok := a.known[as.name]; ok {
			continue
		}
		a.known[as.name] = as.val
		if m := a.macros[as.name]; m != nil && as.val.state == attrSet {
			a.fillOne(m, depth+1)
		}
	}
}

func (a *gitAttributes) allKnown() bool {
	for _, n := range contentAttrs {
		if _, ok := a.known[n]; !ok {
			return false
		}
	}
	return true
}

func (a *gitAttributes) result() pathAttrs {
	return pathAttrs{
		text: a.known["text"], crlf: a.known["crlf"], eol: a.known["eol"],
		ident: a.known["ident"], filter: a.known["filter"], encoding: a.known["working-tree-encoding"],
	}
}

// matches reports whether the rule of the .gitattributes in dir applies
// to file p, whose last component is base: a pattern without '/' is
// matched against base, any other against the path relative to dir, with
// git's pathname rules (internal/wildmatch, compiled once per rule and
// linear in the path's length).
func (r *attrRule) matches(dir, p, base string) bool {
	if !r.literal && !r.suffix && r.glob == nil {
		r.glob = wildmatch.Compile(r.pattern)
	}
	if r.basename {
		switch {
		case r.literal:
			return base == r.pattern
		case r.suffix:
			return strings.HasSuffix(base, r.pattern[1:])
		}
		return r.glob.Match(base)
	}
	rel := p
	if dir != "" {
		var ok bool
		if rel, ok = strings.CutPrefix(p, dir+"/"); !ok {
			return false
		}
	}
	if r.literal {
		return rel == r.pattern
	}
	return r.glob.Match(rel)
}
