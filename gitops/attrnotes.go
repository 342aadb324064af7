package gitops

import (
	"fmt"
	"slices"
	"strings"
)

// attrNotes collects the paths whose attributes ask for something runner
// does not do: a filter driver (LFS, git-crypt), $Id$ expansion, a working
// tree encoding. Such content travels as stored, byte for byte.
type attrNotes struct {
	byAttr map[string][]string // "filter=lfs" → paths
}

// maxNotePaths is how many paths a note names.
const maxNotePaths = 3

// record notes the unsupported attributes of p.
func (n *attrNotes) record(p string, pa pathAttrs) {
	var keys []string
	if pa.filter.state == attrString {
		keys = append(keys, "filter="+pa.filter.value)
	}
	if pa.ident.state == attrSet {
		keys = append(keys, "ident")
	}
	if pa.encoding.state == attrString && !isUTF8Name(pa.encoding.value) {
		keys = append(keys, "working-tree-encoding="+pa.encoding.value)
	}
	for _, k := range keys {
		if n.byAttr == nil {
			n.byAttr = make(map[string][]string)
		}
		n.byAttr[k] = append(n.byAttr[k], p)
	}
}

// isUTF8Name reports an encoding git does not convert to (same_encoding
// with UTF-8).
func isUTF8Name(enc string) bool {
	e := strings.ToUpper(enc)
	return e == "UTF-8" || e == "UTF8"
}

// list returns one sentence per attribute, in a stable order: what
// happened to its paths, how many, and the first few of them. done says
// what happened ("checked out as stored", "committed as the workspace
// holds them").
func (n *attrNotes) list(done string) []string {
	keys := make([]string, 0, len(n.byAttr))
	for k := range n.byAttr {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	var out []string
	for _, k := range keys {
		paths := n.byAttr[k]
		slices.Sort(paths)
		shown := paths[:min(len(paths), maxNotePaths)]
		more := ""
		if len(paths) > len(shown) {
			more = fmt.Sprintf(" and %d more", len(paths)-len(shown))
		}
		files := "files"
		if len(paths) == 1 {
			files = "file"
		}
		out = append(out, fmt.Sprintf("attribute %q is not applied (%s); %d %s %s: %s%s",
			k, why(k), len(paths), files, done, strings.Join(quoteAll(shown), ", "), more))
	}
	return out
}

func why(attr string) string {
	switch {
	case strings.HasPrefix(attr, "filter="):
		return "no filter driver is configured, as in git without one: LFS pointers stay pointers"
	case attr == "ident":
		return "$Id$ is not expanded"
	}
	return "content stays in the repository's encoding"
}

func quoteAll(paths []string) []string {
	out := make([]string, len(paths))
	for i, p := range paths {
		out[i] = fmt.Sprintf("%q", p)
	}
	return out
}
