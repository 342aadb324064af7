package gitops

import (
	"errors"
	"fmt"
	"strings"
)

// Errors callers can branch on with errors.Is.
var (
	// ErrInvalidBranch: the branch name would be refused by
	// `git check-ref-format --branch`.
	ErrInvalidBranch = errors.New("invalid branch name")
	// ErrBranchExists: CommitTree was asked to create a branch that already
	// exists and Force was not set.
	ErrBranchExists = errors.New("branch already exists")
	// ErrBranchChanged: the branch moved between reading it and updating it
	// (another writer won the compare-and-swap).
	ErrBranchChanged = errors.New("branch changed concurrently")
	// ErrBranchLocked: another process holds the branch's lock file
	// (refs/heads/<branch>.lock), as git itself would report.
	ErrBranchLocked = errors.New("branch is locked by another update")
	// ErrBranchNotFound: the local branch to push does not exist.
	ErrBranchNotFound = errors.New("branch not found")
	// ErrBranchCheckedOut matches every *CheckedOutError: CommitTree and
	// Rollback never write or delete a branch checked out in a worktree.
	ErrBranchCheckedOut = errors.New("branch is checked out")
	// ErrUnsafeSnapshot matches every *UnsafeSnapshotError.
	ErrUnsafeSnapshot = errors.New("unsafe snapshot")
	// ErrInvalidTrailer: a trailer key or value cannot be written safely.
	ErrInvalidTrailer = errors.New("invalid trailer")
	// ErrInvalidSignature: an author name or email would corrupt the commit.
	ErrInvalidSignature = errors.New("invalid author")
	// ErrRefNotFound: the ref to clone is neither a branch, a tag nor a
	// commit of the repository.
	ErrRefNotFound = errors.New("ref not found")
	// ErrDirNotEmpty: the clone destination already holds files.
	ErrDirNotEmpty = errors.New("clone directory is not empty")
	// ErrInsecureTransport: credentials would be sent in clear text over
	// http:// to a host that is not the loopback interface.
	ErrInsecureTransport = errors.New("refusing to send credentials over plain http")
	// ErrPushRejected: the remote refused a non-fast-forward update.
	ErrPushRejected = errors.New("push rejected")
	// ErrProtectedPath matches every *ProtectedPathError: CommitTree was
	// given a snapshot that changes a protected path.
	ErrProtectedPath = errors.New("changes to protected paths")
)

// maxListedEntries caps how many offending paths an UnsafeSnapshotError keeps.
const maxListedEntries = 20

// UnsafeEntry is one snapshot entry refused by CommitTree.
type UnsafeEntry struct {
	Path   string // the entry name as written in the tar stream
	Reason string // why it was refused, e.g. "absolute path"
}

// UnsafeSnapshotError reports a snapshot refused as a whole: nothing was
// written to the repository. Entries lists at most 20 offending entries in
// stream order; Total counts all of them.
type UnsafeSnapshotError struct {
	Entries []UnsafeEntry
	Total   int
}

func (e *UnsafeSnapshotError) add(path, reason string) {
	e.Total++
	if len(e.Entries) < maxListedEntries {
		e.Entries = append(e.Entries, UnsafeEntry{Path: path, Reason: reason})
	}
}

// Paths returns the listed offending paths.
func (e *UnsafeSnapshotError) Paths() []string {
	paths := make([]string, len(e.Entries))
	for i, en := range e.Entries {
		paths[i] = en.Path
	}
	return paths
}

func (e *UnsafeSnapshotError) Error() string {
	var b strings.Builder
	fmt.Fprintf(&b, "unsafe snapshot: %d entries refused: ", e.Total)
	for i, en := range e.Entries {
		if i > 0 {
			b.WriteString(", ")
		}
		fmt.Fprintf(&b, "%q (%s)", en.Path, en.Reason)
	}
	if more := e.Total - len(e.Entries); more > 0 {
		fmt.Fprintf(&b, " and %d more", more)
	}
	return b.String()
}

// Is makes errors.Is(err, ErrUnsafeSnapshot) true.
func (e *UnsafeSnapshotError) Is(target error) bool { return target == ErrUnsafeSnapshot }
