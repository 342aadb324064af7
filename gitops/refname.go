package gitops

import (
	"fmt"
	"strings"

	"github.com/go-git/go-git/v5/plumbing"
)

// ValidateBranch reports whether name is acceptable as a branch name, with
// the rules of `git check-ref-format --branch`: no component may be empty,
// start with '.' or end with ".lock"; the name may not contain "..", "@{",
// ASCII control characters, space or any of ~^:?*[\, may not start with '-'
// or end with '/' or '.', and may not be "HEAD". The error wraps
// ErrInvalidBranch and names the branch.
func ValidateBranch(name string) error {
	if reason := branchProblem(name); reason != "" {
		return fmt.Errorf("%w %q: %s", ErrInvalidBranch, name, reason)
	}
	return nil
}

func branchProblem(name string) string {
	switch {
	case name == "":
		return "empty"
	case name == "HEAD":
		return "reserved name"
	case strings.HasPrefix(name, "-"):
		return "starts with '-'"
	case strings.HasSuffix(name, "."):
		return "ends with '.'"
	case strings.Contains(name, ".."):
		return `contains ".."`
	case strings.Contains(name, "@{"):
		return `contains "@{"`
	}
	for _, c := range []byte(name) {
		if c < 0x20 || c == 0x7f {
			return "contains a control character"
		}
		if strings.IndexByte(" ~^:?*[\\", c) >= 0 {
			return fmt.Sprintf("contains %q", c)
		}
	}
	for comp := range strings.SplitSeq(name, "/") {
		switch {
		case comp == "":
			return "has an empty path component"
		case strings.HasPrefix(comp, "."):
			return "has a component starting with '.'"
		case strings.HasSuffix(comp, ".lock"):
			return `has a component ending with ".lock"`
		}
	}
	return ""
}

// branchRef returns refs/heads/<name> after validating name.
func branchRef(name string) (plumbing.ReferenceName, error) {
	if err := ValidateBranch(name); err != nil {
		return "", err
	}
	return plumbing.NewBranchReferenceName(name), nil
}
