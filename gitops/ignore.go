package gitops

import (
	"bytes"
	"fmt"
	"path"
	"strings"

	"github.com/runner-dev/runner/internal/wildmatch"
)

// Bounds on the ignore rules of one commit. Every untracked path is matched
// against the rules of the directories above it, so they bound the host's
// CPU and memory against a workspace written to spend them; real
// repositories stay far below (a .gitignore of a few KiB, a few hundred
// rules in all). Crossing one refuses the snapshot, naming the file.
const (
	maxIgnoreFileSize = 1 << 20 // bytes of one .gitignore or info/exclude
	maxIgnoreRules    = 10_000  // rules of all files together
	maxIgnoreBytes    = 1 << 20 // bytes of the patterns of all files together
	maxIgnorePattern  = 1024    // bytes of one pattern
)

// ignoreRule is one pattern line of a .gitignore file or of info/exclude.
type ignoreRule struct {
	pattern  string // glob, without the leading '!' and trailing '/'
	negate   bool   // "!pattern" re-includes
	dirOnly  bool   // "pattern/" matches directories only
	basename bool   // no '/' in pattern: matched against the last component
	line     int    // in its file, for messages
	glob     *wildmatch.Pattern
}

// ignoreRules answers "would git add -A skip this untracked path?". It
// evaluates patterns the way git does rather than with go-git's
// plumbing/format/gitignore, whose matcher also matches a pattern against
// every parent directory of a path: that makes "!dir/" re-include files
// excluded by "*.log" and lets "!dir/x" rescue a file inside an excluded
// "dir/**", both of which git refuses. Here a path is ignored when one of
// its parent directories is excluded, or else when the last rule matching
// the path itself is not a negation: the rules of the deepest .gitignore
// above it first, a later line before an earlier one, info/exclude last.
//
// Patterns are compiled once (wildmatch.Compile) and matched in linear
// time. An ignoreRules is not safe for concurrent use.
type ignoreRules struct {
	exclude []ignoreRule            // info/exclude and other low-priority lists
	dirs    map[string][]ignoreRule // by directory of the .gitignore; "" is the root
	nrules  int
	nbytes  int
	// topExcluded caches excludedDir; the entries rules added can change
	// are dropped.
	topExcluded map[string]string
	// steps counts the matcher's work (wildmatch.Pattern.MatchCounting).
	steps int
}

// newIgnoreRules builds the rules from exclude (info/exclude, or any list
// of lowest priority) and the .gitignore files in files, keyed by
// directory. An error names the file whose rules cross a bound.
func newIgnoreRules(exclude []byte, files map[string][]byte) (*ignoreRules, error) {
	ig := &ignoreRules{dirs: make(map[string][]ignoreRule), topExcluded: make(map[string]string)}
	if err := ig.addExclude("info/exclude", exclude); err != nil {
		return nil, err
	}
	for d, content := range files {
		if err := ig.addFile(d, content); err != nil {
			return nil, err
		}
	}
	return ig, nil
}

// addExclude adds a list of lowest priority, below those already added;
// where names it in errors.
func (ig *ignoreRules) addExclude(where string, content []byte) error {
	rules, err := ig.parse(where, content)
	if err != nil {
		return err
	}
	ig.exclude = append(rules, ig.exclude...)
	clear(ig.topExcluded)
	return nil
}

// addFile adds the .gitignore of directory dir ("" for the root).
func (ig *ignoreRules) addFile(dir string, content []byte) error {
	rules, err := ig.parse(path.Join(dir, ".gitignore"), content)
	if err != nil {
		return err
	}
	ig.dirs[dir] = rules
	if dir == "" {
		clear(ig.topExcluded)
		return nil
	}
	// The rules of dir/.gitignore only match paths below dir.
	for d := range ig.topExcluded {
		if strings.HasPrefix(d, dir+"/") {
			delete(ig.topExcluded, d)
		}
	}
	return nil
}

// parse reads and compiles the rules of one file, within the bounds.
func (ig *ignoreRules) parse(where string, content []byte) ([]ignoreRule, error) {
	if len(content) > maxIgnoreFileSize {
		return nil, fmt.Errorf("%s: ignore file of %d bytes exceeds the %d-byte limit", where, len(content), maxIgnoreFileSize)
	}
	rules := parseIgnore(content)
	for i := range rules {
		r := &rules[i]
		if len(r.pattern) > maxIgnorePattern {
			return nil, fmt.Errorf("%s:%d: ignore pattern of %d bytes exceeds the %d-byte limit", where, r.line, len(r.pattern), maxIgnorePattern)
		}
		ig.nbytes += len(r.pattern)
		r.glob = wildmatch.Compile(r.pattern)
	}
	ig.nrules += len(rules)
	switch {
	case ig.nrules > maxIgnoreRules:
		return nil, fmt.Errorf("%s: more than %d ignore rules in all: refused to spare the host", where, maxIgnoreRules)
	case ig.nbytes > maxIgnoreBytes:
		return nil, fmt.Errorf("%s: more than %d bytes of ignore patterns in all: refused to spare the host", where, maxIgnoreBytes)
	}
	return rules, nil
}

// parseIgnore reads gitignore lines: a UTF-8 BOM, CR before LF, blank
// lines and lines starting with '#' are skipped; trailing spaces are
// dropped unless escaped with '\'.
func parseIgnore(content []byte) []ignoreRule {
	content = bytes.TrimPrefix(content, []byte("\xef\xbb\xbf"))
	var rules []ignoreRule
	n := 0
	for line := range strings.SplitSeq(string(content), "\n") {
		n++
		line = strings.TrimSuffix(line, "\r")
		if line == "" || line[0] == '#' {
			continue
		}
		line = trimTrailingSpaces(line)
		r := ignoreRule{line: n}
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
func (ig *ignoreRules) dirExcluded(d string) bool { return ig.excludedDir(d) != "" }

// excludedDir returns the outermost excluded directory among d and its
// parents, or "" when none is.
func (ig *ignoreRules) excludedDir(d string) string {
	if v, ok := ig.topExcluded[d]; ok {
		return v
	}
	var v string
	if parent := path.Dir(d); parent != "." {
		v = ig.excludedDir(parent)
	}
	if v == "" && ig.excluded(d, true) {
		v = d
	}
	ig.topExcluded[d] = v
	return v
}

// excluded applies the first rule matching p itself, from the deepest
// .gitignore above p to the root's, then info/exclude.
func (ig *ignoreRules) excluded(p string, isDir bool) bool {
	base := p[strings.LastIndexByte(p, '/')+1:]
	for dir := p; ; {
		i := strings.LastIndexByte(dir, '/')
		if i < 0 {
			dir = ""
		} else {
			dir = dir[:i]
		}
		rel := p
		if dir != "" {
			rel = p[len(dir)+1:]
		}
		if m, ok := ig.match(ig.dirs[dir], rel, base, isDir); ok {
			return m
		}
		if dir == "" {
			break
		}
	}
	m, _ := ig.match(ig.exclude, p, base, isDir)
	return m
}

// match applies the last rule of rules matching rel (base its last
// component); ok is false when none does.
func (ig *ignoreRules) match(rules []ignoreRule, rel, base string, isDir bool) (excluded, ok bool) {
	for i := len(rules) - 1; i >= 0; i-- {
		r := &rules[i]
		if r.dirOnly && !isDir {
			continue
		}
		text := rel
		if r.basename {
			text = base
		}
		if r.glob.MatchCounting(text, &ig.steps) {
			return !r.negate, true
		}
	}
	return false, false
}
