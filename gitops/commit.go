package gitops

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"slices"
	"time"

	"github.com/go-git/go-git/v5"
	"github.com/go-git/go-git/v5/plumbing"
	"github.com/go-git/go-git/v5/plumbing/filemode"
	"github.com/go-git/go-git/v5/plumbing/object"
)

// CommitOptions describe the commit CommitTree makes.
type CommitOptions struct {
	// Branch receives the commit, as refs/heads/<Branch>. Required.
	Branch string
	// Message is the summary (and optional body); DefaultMessage if empty.
	Message string
	// Trailers close the message, in this order, after a blank line.
	Trailers []Trailer
	// Author is also the committer; DefaultSignature if zero.
	Author Signature
	// When dates the commit; now if zero.
	When time.Time
	// Force moves an existing branch instead of failing with
	// ErrBranchExists.
	Force bool
	// Expect, when set, is where the branch must be: it is moved from
	// there (by compare-and-swap, so a fast-forward when base is Expect),
	// and a branch that is elsewhere or gone fails with ErrBranchChanged,
	// Force or not.
	Expect plumbing.Hash
	// MaxFileSize refuses larger files; DefaultMaxFileSize if zero.
	MaxFileSize int64
	// MaxEntries refuses snapshots with more tar entries, counting those
	// of the skipped .git directories but not the untracked entries of
	// ignored directories (of which ten times as many may be dropped);
	// DefaultMaxEntries if zero.
	MaxEntries int
	// MaxCommitSize caps the new content the commit adds to the
	// repository: the bytes of the blobs it lacks, uncompressed, after
	// line-ending conversion. The snapshot's content the repository lacks
	// is spooled on the host up to this size too. Over it, the snapshot is
	// refused with a *CommitSizeError (errors.Is ErrCommitTooLarge).
	// DefaultMaxCommitSize if zero.
	MaxCommitSize int64
	// Protected are globs (see policy.Protection) of paths the commit may
	// not add, modify, delete or change the type of, under any spelling a
	// file system takes for them, directly or through a symlink; nor may
	// it add, change or remove a symlink or submodule at or above paths a
	// glob could match (see policy.Protection.Exposed). Such a snapshot is
	// refused with a *ProtectedPathError.
	Protected []string
	// Exclude are gitignore patterns, one per line, applied as git applies
	// core.excludesFile: below info/exclude and every .gitignore of the
	// snapshot, so a repository's "!pattern" re-includes, and never to a
	// tracked path. What they alone leave out is listed in
	// CommitResult.Excluded.
	Exclude []string
}

// ChangeKind says what happened to a path between base and commit.
type ChangeKind uint8

// The kinds of FileChange, printed as git's status letters.
const (
	Added ChangeKind = iota + 1
	Modified
	Deleted
	TypeChanged
)

func (k ChangeKind) String() string {
	switch k {
	case Added:
		return "A"
	case Modified:
		return "M"
	case Deleted:
		return "D"
	case TypeChanged:
		return "T"
	}
	return "?"
}

// FileChange is one path that differs from the base commit, classified as
// `git diff --name-status --no-renames` does: a change of content or of the
// executable bit is Modified, a file turned into a symlink (or back) is
// TypeChanged.
type FileChange struct {
	Path string
	Kind ChangeKind
}

// CommitResult describes the outcome of CommitTree.
type CommitResult struct {
	// Hash of the new commit; zero when NoChanges.
	Hash plumbing.Hash
	// Tree of the new commit (the base tree when NoChanges).
	Tree plumbing.Hash
	// Branch is the full ref name updated; empty when NoChanges.
	Branch plumbing.ReferenceName
	// NoChanges reports a snapshot identical to the base commit: then no
	// commit is made and no branch is created or moved, so that a task
	// that changed nothing leaves nothing to review or roll back.
	NoChanges bool
	// Changes lists the changed paths in path order.
	Changes []FileChange
	// Warnings say where the commit differs from what the workspace
	// seems to hold: nested repositories and submodule content left out,
	// attributes not applied (see planCommit).
	Warnings []string
	// Excluded lists, sorted, the untracked paths CommitOptions.Exclude
	// left out that the repository's own ignore rules would have
	// committed: files, and directories wholly left out as "dir/".
	// ExcludedFiles counts the files.
	Excluded      []string
	ExcludedFiles int
}

// CommitTree records the snapshot, a tar stream of the agent's workspace,
// as a commit whose single parent is base, and points refs/heads/<Branch>
// at it in the repository at repoPath.
//
// The tree is the one `git add -A` would stage in a checkout of base
// holding the snapshot's files: additions, modifications, deletions,
// symlinks (120000), modes 100755 when the owner's execute bit is set and
// 100644 otherwise (git's own rule); empty directories are dropped;
// untracked files ignored by the snapshot's .gitignore files (any depth),
// the repository's info/exclude or opts.Exclude are left out while tracked
// ones stay tracked; line endings are converted as the snapshot's .gitattributes
// files and the repository's info/attributes ask (text, text=auto, eol,
// binary), a file still as Clone checked it out keeping its base blob (see
// normalizer); a gitlink (submodule) stays while its directory exists,
// even empty, is deleted with its directory and changes type when a file
// or symlink takes its place. The agent's .git directories are never
// imported. Not reproduced, and said in CommitResult.Warnings: a nested
// repository (an untracked directory with a .git of its own) is left out,
// where git would record a gitlink to a commit that only exists in the
// agent's .git; the filter, ident and working-tree-encoding attributes are
// not applied. The repository's core.excludesFile and core.attributesFile
// are not read; opts.Exclude takes the place of the former.
//
// Content the repository lacks is spooled to an unlinked file in
// os.TempDir() while the stream is checked, at most MaxCommitSize bytes;
// the spool is closed, its space given back, on every return and on a
// panic. Every call opens its own handle on repoPath, so concurrent calls
// on one repository are safe.
//
// New content over MaxCommitSize is refused as a whole with a
// *CommitSizeError naming the largest files, before anything is written.
// The new objects (blobs, trees, the commit) are written as one pack with
// its index, renamed into place once complete as git does, never as loose
// objects: a failure or a cancellation leaves the object store as it was.
//
// A snapshot holding absolute paths, ".." components, hard links, devices,
// FIFOs, entries below a file or symlink, duplicates, a file over
// MaxFileSize or more than MaxEntries entries is refused as a whole with an
// *UnsafeSnapshotError, before anything is written; hard links, devices,
// FIFOs and large files that git add -A would leave out as ignored are
// dropped instead (see readSnapshot), and so are the entries of ignored
// directories. Ignore rules beyond the bounds of ignore.go refuse it too.
//
// Only objects and the branch are written: HEAD, the index, the worktree
// and the config of the repository are never touched. The branch is
// created only if absent unless Force; see CommitResult.NoChanges.
//
// A snapshot that changes a path matching opts.Protected is refused as a
// whole with a *ProtectedPathError (errors.Is ErrProtectedPath), before
// anything is written.
func CommitTree(ctx context.Context, repoPath string, base plumbing.Hash, snapshot io.Reader, opts CommitOptions) (CommitResult, error) {
	ref, err := branchRef(opts.Branch)
	if err != nil {
		return CommitResult{}, err
	}
	msg, err := commitMessage(opts.Message, opts.Trailers)
	if err != nil {
		return CommitResult{}, err
	}
	author, err := opts.Author.orDefault()
	if err != nil {
		return CommitResult{}, err
	}
	repo, err := openRepo(repoPath)
	if err != nil {
		return CommitResult{}, err
	}
	st := repo.Storer
	baseCommit, err := object.GetCommit(st, base)
	if err != nil {
		return CommitResult{}, fmt.Errorf("read base commit %s: %w", base, err)
	}
	// Fail before reading the snapshot; setBranch checks again under lock.
	switch cur, err := st.Reference(ref); {
	case !opts.Expect.IsZero():
		if err := expectAt(ref, cur, err, opts.Expect); err != nil {
			return CommitResult{}, err
		}
	case !opts.Force && err == nil:
		return CommitResult{}, fmt.Errorf("%w: %s", ErrBranchExists, opts.Branch)
	}

	baseFiles, err := flattenTree(st, baseCommit.TreeHash)
	if err != nil {
		return CommitResult{}, err
	}
	repoExclude, err := infoExclude(repo)
	if err != nil {
		return CommitResult{}, err
	}
	exclude, err := excludeRules(opts.Exclude, repoExclude)
	if err != nil {
		return CommitResult{}, err
	}
	ig, err := newIgnoreRules(exclude, nil)
	if err != nil {
		return CommitResult{}, err
	}
	limit := opts.MaxCommitSize
	if limit <= 0 {
		limit = DefaultMaxCommitSize
	}
	spool, err := newSpool()
	if err != nil {
		return CommitResult{}, err
	}
	defer spool.Close()
	snap, err := parseSnapshot(ctx, repo, baseFiles, snapshot, opts, spool, limit, ig)
	if err != nil {
		return CommitResult{}, err
	}
	files, warnings, err := planCommit(ctx, repo, baseFiles, snap, ig)
	if err != nil {
		return CommitResult{}, err
	}
	var excluded []string
	var excludedFiles int
	if len(opts.Exclude) > 0 {
		repoRules, err := newIgnoreRules(repoExclude, snap.ignoreFiles)
		if err != nil {
			return CommitResult{}, err
		}
		if excluded, excludedFiles, err = excludedPaths(ctx, baseFiles, snap, files, ig, repoRules); err != nil {
			return CommitResult{}, err
		}
	}
	changes := diffFiles(baseFiles, files)
	if err := checkProtected(ctx, st, baseFiles, files, snap, changes, opts.Protected); err != nil {
		return CommitResult{}, err
	}
	objs := newNewObjects(st)
	if err := newContent(snap, files, limit, objs); err != nil {
		return CommitResult{}, err
	}
	tree, err := writeTree(ctx, objs, files)
	if err != nil {
		return CommitResult{}, err
	}
	if tree == baseCommit.TreeHash {
		return CommitResult{Tree: tree, NoChanges: true, Warnings: warnings, Excluded: excluded, ExcludedFiles: excludedFiles}, nil
	}

	when := opts.When
	if when.IsZero() {
		when = time.Now()
	}
	sig := object.Signature{Name: author.Name, Email: author.Email, When: when}
	commit := &object.Commit{
		Author:       sig,
		Committer:    sig,
		Message:      msg,
		TreeHash:     tree,
		ParentHashes: []plumbing.Hash{base},
	}
	obj := objs.NewEncodedObject()
	if err := commit.Encode(obj); err != nil {
		return CommitResult{}, fmt.Errorf("encode commit: %w", err)
	}
	hash, err := storeObject(objs, obj)
	if err != nil {
		return CommitResult{}, err
	}
	common, err := commonGitDir(repo)
	if err != nil {
		return CommitResult{}, err
	}
	if err := objs.write(ctx, common); err != nil {
		return CommitResult{}, err
	}
	if err := ctx.Err(); err != nil {
		return CommitResult{}, err
	}
	if err := setBranch(repo, ref, hash, opts.Force, opts.Expect); err != nil {
		return CommitResult{}, err
	}
	return CommitResult{Hash: hash, Tree: tree, Branch: ref, Changes: changes, Warnings: warnings, Excluded: excluded, ExcludedFiles: excludedFiles}, nil
}

// newSpool creates the file that holds the snapshot's new content while
// the stream is checked. It is unlinked at once where the OS allows it, so
// that even a killed process leaves nothing behind; Close removes it again
// after closing elsewhere.
func newSpool() (*spoolFile, error) {
	f, err := os.CreateTemp("", "runner-snapshot-*")
	if err != nil {
		return nil, fmt.Errorf("create snapshot spool: %w", err)
	}
	_ = os.Remove(f.Name())
	return &spoolFile{File: f}, nil
}

type spoolFile struct{ *os.File }

func (s *spoolFile) Close() error {
	err := s.File.Close()
	_ = os.Remove(s.Name())
	return err
}

// parseSnapshot reads the tar stream, spooling the content of blobs the
// repository lacks, at most limit bytes of it.
func parseSnapshot(ctx context.Context, repo *git.Repository, baseFiles map[string]treeEntry, r io.Reader, opts CommitOptions, spool *spoolFile, limit int64, ig *ignoreRules) (*snapshot, error) {
	lim := snapshotLimits{maxFileSize: opts.MaxFileSize, maxEntries: opts.MaxEntries, spool: limit}
	if lim.maxFileSize <= 0 {
		lim.maxFileSize = DefaultMaxFileSize
	}
	if lim.maxEntries <= 0 {
		lim.maxEntries = DefaultMaxEntries
	}
	inBase := make(map[plumbing.Hash]bool, len(baseFiles))
	for _, e := range baseFiles {
		inBase[e.hash] = true
	}
	known := func(h plumbing.Hash) bool {
		return inBase[h] || repo.Storer.HasEncodedObject(h) == nil
	}
	return readSnapshot(ctx, r, lim, known, spool.File, ig, baseFiles)
}

// infoExclude returns the repository's info/exclude, or nothing.
func infoExclude(repo *git.Repository) ([]byte, error) {
	fs, err := gitDir(repo)
	if err != nil {
		return nil, err
	}
	f, err := fs.Open("info/exclude")
	if errors.Is(err, os.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("open info/exclude: %w", err)
	}
	defer f.Close()
	b, err := io.ReadAll(io.LimitReader(f, maxIgnoreFileSize+1))
	if err != nil {
		return nil, fmt.Errorf("read info/exclude: %w", err)
	}
	return b, nil
}

// objectType groups modes as git does for type changes: regular files of
// either mode, symlinks, gitlinks.
func objectType(m filemode.FileMode) filemode.FileMode {
	if m == filemode.Executable || m == filemode.Deprecated {
		return filemode.Regular
	}
	return m
}

// diffFiles lists the paths that differ between two flattened trees.
func diffFiles(base, next map[string]treeEntry) []FileChange {
	var changes []FileChange
	for p, n := range next {
		switch b, ok := base[p]; {
		case !ok:
			changes = append(changes, FileChange{Path: p, Kind: Added})
		case objectType(b.mode) != objectType(n.mode):
			changes = append(changes, FileChange{Path: p, Kind: TypeChanged})
		case b != n:
			changes = append(changes, FileChange{Path: p, Kind: Modified})
		}
	}
	for p := range base {
		if _, ok := next[p]; !ok {
			changes = append(changes, FileChange{Path: p, Kind: Deleted})
		}
	}
	slices.SortFunc(changes, func(a, b FileChange) int {
		switch {
		case a.Path < b.Path:
			return -1
		case a.Path > b.Path:
			return 1
		}
		return 0
	})
	return changes
}
