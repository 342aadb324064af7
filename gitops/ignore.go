package gitops

import (
	"bytes"
	"path"
	"slices"
	"strings"

	"github.com/runner-dev/runner/internal/wildmatch"
)

// ignoreRule is one pattern line of a .gitignore file or of info/exclude.
type ignoreRule struct {
	dir      string // directory of the file holding the rule; "" for the root
	pattern  string // glob, without the leading '!' and trailing '/'
	negate   bool   // "!pattern" re-includes
	dirOnly  bool   // "pattern/" matches directories only
	basename bool   // no '/' in pattern: matched against the last component
}

// ignoreRules answers "would git add -A skip this untracked path?". It
// evaluates patterns the way git does rather than with go-git's
// plumbing/format/gitignore, whose matcher also matches a pattern against
// every parent directory of a path: that makes "!dir/" re-include files
// excluded by "*.log" and lets "!dir/x" rescue a file inside an excluded
// "dir/**", both of which git refuses. Here a path is ignored when one of
// its parent directories is excluded, or else when the last rule matching
// the path itself is not a negation.
type ignoreRules struct {
	rules   []ignoreRule // ascending priority
	dirSeen map[string]bool
}

// newIgnoreRules builds the rules from info/exclude (lowest priority) and
// the .gitignore files of the snapshot, keyed by directory; a deeper file
// takes priority over a shallower one, a later line over an earlier one.
func newIgnoreRules(exclude []byte, files map[string][]byte) *ignoreRules {
	ig := &ignoreRules{dirSeen: make(map[string]bool)}
	ig.rules = parseIgnore("", exclude)
	dirs := make([]string, 0, len(files))
	for d := range files {
		dirs = append(dirs, d)
	}
	slices.SortFunc(dirs, func(a, b string) int {
		if da, db := depth(a), depth(b); da != db {
			return da - db
		}
		return strings.Compare(a, b)
	})
	for _, d := range dirs {
		ig.rules = append(ig.rules, parseIgnore(d, files[d])...)
	}
	return ig
}

func depth(dir string) int {
	if dir == "" {
		return 0
	}
	return strings.Count(dir, "/") + 1
}

// parseIgnore reads gitignore lines: a UTF-8 BOM, CR before LF, blank
// lines and lines starting with '#' are skipped; trailing spaces are
// dropped unless escaped with '\'.
func parseIgnore(dir string, content []byte) []ignoreRule {
	content = bytes.TrimPrefix(content, []byte("\xef\xbb\xbf"))
	var rules []ignoreRule
	for line := range strings.SplitSeq(string(content), "\n") {
		line = strings.TrimSuffix(line, "\r")
		if line == "" || line[0] == '#' {
			continue
		}
		line = trimTrailingSpaces(line)
		r := ignoreRule{dir: dir}
		if strings.HasPrefix(line, "!") {
			r.negate, line = true, line[1:]
		}
		if strings.HasSuffix(line, "/") {
			r.dirOnly, line = true, line[:len(line)-1]
		}
		if line == "" {
			continue
		}
		r.basename = !strings.Contains(line, "/")
		r.pattern = strings.TrimPrefix(line, "/")
		rules = append(rules, r)
	}
	return rules
}

// trimTrailingSpaces drops unescaped trailing spaces ("a\ " keeps one).
func trimTrailingSpaces(s string) string {
	end := len(s)
	for i := 0; i < len(s); i++ {
		switch s[i] {
		case ' ':
			continue
		case '\\':
			i++
		}
		end = min(i+1, len(s))
	}
	return s[:end]
}

// ignored reports whether git add -A would leave the untracked file p out.
func (ig *ignoreRules) ignored(p string) bool {
	if dir := path.Dir(p); dir != "." && ig.dirExcluded(dir) {
		return true
	}
	return ig.excluded(p, false)
}

// dirExcluded reports whether directory d, or one of its parents, is
// excluded; git does not look inside an excluded directory.
func (ig *ignoreRules) dirExcluded(d string) bool {
	if v, ok := ig.dirSeen[d]; ok {
		return v
	}
	parent := path.Dir(d)
	v := (parent != "." && ig.dirExcluded(parent)) || ig.excluded(d, true)
	ig.dirSeen[d] = v
	return v
}

// excluded applies the last rule matching p itself.
func (ig *ignoreRules) excluded(p string, isDir bool) bool {
	for i := len(ig.rules) - 1; i >= 0; i-- {
		r := &ig.rules[i]
		if r.dirOnly && !isDir {
			continue
		}
		rel := p
		if r.dir != "" {
			var inside bool
			rel, inside = strings.CutPrefix(p, r.dir+"/")
			if !inside {
				continue
			}
		}
		if r.basename {
			rel = path.Base(rel)
		}
		if wildmatch.Match(r.pattern, rel) {
			return !r.negate
		}
	}
	return false
}
