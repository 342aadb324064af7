package policy

import (
	"regexp"
	"strings"

	"golang.org/x/text/cases"
	"golang.org/x/text/unicode/norm"
)

// foldText is the caseless form of s that Unicode defines for comparing
// names (NFD, case folding, NFD again): what a case- and
// normalisation-insensitive file system (APFS, HFS+, NTFS for case)
// compares. Glob syntax survives it.
func foldText(s string) string {
	if ascii(s) {
		return strings.ToLower(s)
	}
	return norm.NFD.String(cases.Fold().String(norm.NFD.String(s)))
}

func ascii(s string) bool {
	for i := 0; i < len(s); i++ {
		if s[i] >= 0x80 {
			return false
		}
	}
	return true
}

// foldName is the spelling under which a file system may find the path
// component raw, folded as foldText after dropping what some file systems
// ignore in a name:
//
//   - the code points HFS+ ignores (zero-width joiners, direction marks,
//     the byte order mark), as git's own check for ".git" does;
//   - an NTFS alternate data stream ("name:stream:$DATA" opens name);
//   - the trailing dots and spaces Windows drops.
func foldName(raw string) string {
	s := raw
	if !ascii(s) {
		s = strings.Map(DropHFSIgnorable, s)
	}
	if i := strings.IndexByte(s, ':'); i > 0 {
		s = s[:i]
	}
	if t := strings.TrimRight(s, ". "); t != "" {
		s = t
	}
	return foldText(s)
}

// DropHFSIgnorable removes the code points HFS+ ignores when comparing
// names (zero-width joiners, direction marks, the byte order mark): a
// function for strings.Map, shared by every check of a name's spelling.
func DropHFSIgnorable(r rune) rune {
	switch {
	case r >= 0x200c && r <= 0x200f, r >= 0x202a && r <= 0x202e,
		r >= 0x206a && r <= 0x206f, r == 0xfeff:
		return -1
	}
	return r
}

// shortName matches an 8.3 short name as Windows makes them for long
// names: up to six characters, '~', a number, an optional extension.
var shortName = regexp.MustCompile(`^([^~.]{1,6})~[0-9]{1,6}(\.[^.]{0,3})?$`)

// shortNameBase returns the part before '~' of a component shaped like an
// 8.3 short name (folded), or "". On an NTFS volume such a name may open
// the existing file whose long name it abbreviates.
func shortNameBase(raw string) string {
	if !strings.Contains(raw, "~") {
		return ""
	}
	m := shortName.FindStringSubmatch(foldName(raw))
	if m == nil {
		return ""
	}
	return m[1]
}

// shortNameSeed is what Windows abbreviates a (folded) long name from when
// it makes its 8.3 short name: leading dots dropped, the extension cut off,
// the remaining dots and spaces dropped and characters 8.3 names may not
// hold replaced by '_'. A short name whose base is a prefix of it may
// stand for the long name.
func shortNameSeed(folded string) string {
	s := strings.TrimLeft(folded, ".")
	if i := strings.LastIndexByte(s, '.'); i > 0 {
		s = s[:i]
	}
	s = strings.NewReplacer(".", "", " ", "", "+", "_", ",", "_", ";", "_", "=", "_", "[", "_", "]", "_").Replace(s)
	return s
}
