package gitops

import (
	"fmt"
	"strings"

	"github.com/runner-dev/runner/internal/wildmatch"
)

// ProtectedPathError reports a snapshot refused by CommitTree because it
// changes protected paths: nothing was written to the repository.
type ProtectedPathError struct {
	// Changes lists every offending change, in path order.
	Changes []FileChange
}

func (e *ProtectedPathError) Error() string {
	var b strings.Builder
	fmt.Fprintf(&b, "%s: ", ErrProtectedPath)
	for i, c := range e.Changes {
		if i > 0 {
			b.WriteString(", ")
		}
		fmt.Fprintf(&b, "%s (%s)", c.Path, c.Kind.verb())
	}
	return b.String()
}

// Paths returns the offending paths.
func (e *ProtectedPathError) Paths() []string {
	paths := make([]string, len(e.Changes))
	for i, c := range e.Changes {
		paths[i] = c.Path
	}
	return paths
}

// Is makes errors.Is(err, ErrProtectedPath) true.
func (e *ProtectedPathError) Is(target error) bool { return target == ErrProtectedPath }

// checkProtected refuses changes to paths matching the protected globs.
func checkProtected(changes []FileChange, protected []string) error {
	if len(protected) == 0 {
		return nil
	}
	var bad []FileChange
	for _, c := range changes {
		if wildmatch.MatchAny(protected, c.Path) {
			bad = append(bad, c)
		}
	}
	if len(bad) > 0 {
		return &ProtectedPathError{Changes: bad}
	}
	return nil
}

// verb names a change in words, for messages.
func (k ChangeKind) verb() string {
	switch k {
	case Added:
		return "added"
	case Modified:
		return "modified"
	case Deleted:
		return "deleted"
	case TypeChanged:
		return "type changed"
	}
	return "changed"
}
