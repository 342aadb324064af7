package gitops

import (
	"errors"
	"fmt"
	"strings"
	"testing"
)

// TestValidateBranchAgreesWithGit asks `git check-ref-format --branch`
// about every name and expects the same verdict.
func TestValidateBranchAgreesWithGit(t *testing.T) {
	names := []string{
		"main", "runner/task-1", "feature/a.b", "a-b_c", "ünïcode", "x/y/z", "a.lockx", "a@b", "v1.0", "@x", "x@",
		"", "-leading", "a..b", "a b", "a~1", "a^", "a:b", "a?", "a*", "a[b", `a\b`, "a.lock", "a/b.lock", "a/", "/a",
		"a//b", "a.", ".a", "a/.b", "a@{b", "@", "HEAD", "a\tb", "a\x7fb", "a\nb", "refs/heads/x", "a/./b", "a/../b",
	}
	for _, name := range names {
		_, gitErr := gitTry(t.TempDir(), "check-ref-format", "--branch", name)
		wantOK := gitErr == nil
		err := ValidateBranch(name)
		if gotOK := err == nil; gotOK != wantOK {
			t.Errorf("ValidateBranch(%q) = %v, git check-ref-format --branch accepts: %v", name, err, wantOK)
		}
		if err != nil {
			if !errors.Is(err, ErrInvalidBranch) {
				t.Errorf("ValidateBranch(%q) error %v does not wrap ErrInvalidBranch", name, err)
			}
			if !strings.Contains(err.Error(), fmt.Sprintf("%q", name)) {
				t.Errorf("ValidateBranch(%q) error %q does not name the branch", name, err)
			}
		}
	}
}
