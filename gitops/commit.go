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
	// of the skipped .git directories; DefaultMaxEntries if zero.
	MaxEntries int
	// Protected are globs (see policy.Protection) of paths the commit may
	// not add, modify, delete or change the type of, under any spelling a
	// file system takes for them, directly or through a symlink; nor may
	// it add, change or remove a symlink or submodule at or above paths a
	// glob could match (see policy.Protection.Exposed). Such a snapshot is
	// refused with a *ProtectedPathError.
	Protected []string
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
}

// CommitTree records the snapshot, a tar stream of the agent's workspace,
// as a commit whose single parent is base, and points refs/heads/<Branch>
// at it in the repository at repoPath.
//
// The tree is the one `git add -A` would stage in a checkout of base
// holding the snapshot's files: additions, modifications, deletions,
// symlinks (120000), modes 100755 when the owner's execute bit is set and
// 100644 otherwise (git's own rule); empty directories are dropped;
// untracked files ignored by the snapshot's .gitignore files (any depth) or
// the repository's info/exclude are left out while tracked ones stay
// tracked; line endings are converted as the snapshot's .gitattributes
// files and the repository's info/attributes ask (text, text=auto, eol,
// binary), a file still as Clone checked it out keeping its base blob (see
// normalizer); a gitlink (submodule) stays while its directory exists,
// even empty, is deleted with its directory and changes type when a file
// or symlink takes its place. The agent's .git directories are never
// imported. Not reproduced, and said in CommitResult.Warnings: a nested
// repository (an untracked directory with a .git of its own) is left out,
// where git would record a gitlink to a commit that only exists in the
// agent's .git; the filter, ident and working-tree-encoding attributes are
// not applied. core.excludesFile and core.attributesFile are not read.
//
// Content the repository lacks is spooled to an unlinked file in
// os.TempDir() while the stream is checked. Every call opens its own handle
// on repoPath, so concurrent calls on one repository are safe.
//
// A snapshot holding absolute paths, ".." components, hard links, devices,
// FIFOs, entries below a file or symlink, duplicates, a file over
// MaxFileSize or more than MaxEntries entries is refused as a whole with an
// *UnsafeSnapshotError, before anything is written.
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
	snap, cleanup, err := parseSnapshot(ctx, repo, baseFiles, snapshot, opts)
	if err != nil {
		return CommitResult{}, err
	}
	defer cleanup()

	exclude, err := infoExclude(repo)
	if err != nil {
		return CommitResult{}, err
	}
	files, warnings, err := planCommit(ctx, repo, baseFiles, snap, newIgnoreRules(exclude, snap.ignoreFiles))
	if err != nil {
		return CommitResult{}, err
	}
	changes := diffFiles(baseFiles, files)
	if err := checkProtected(ctx, st, baseFiles, files, snap, changes, opts.Protected); err != nil {
		return CommitResult{}, err
	}
	if err := writeBlobs(ctx, repo, snap, files); err != nil {
		return CommitResult{}, err
	}
	tree, err := writeTree(st, files)
	if err != nil {
		return CommitResult{}, err
	}
	if tree == baseCommit.TreeHash {
		return CommitResult{Tree: tree, NoChanges: true, Warnings: warnings}, nil
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
	obj := st.NewEncodedObject()
	if err := commit.Encode(obj); err != nil {
		return CommitResult{}, fmt.Errorf("encode commit: %w", err)
	}
	hash, err := storeObject(st, obj)
	if err != nil {
		return CommitResult{}, err
	}
	if err := ctx.Err(); err != nil {
		return CommitResult{}, err
	}
	if err := setBranch(repo, ref, hash, opts.Force, opts.Expect); err != nil {
		return CommitResult{}, err
	}
	return CommitResult{Hash: hash, Tree: tree, Branch: ref, Changes: changes, Warnings: warnings}, nil
}

// parseSnapshot reads the tar stream, spooling the content of blobs the
// repository lacks to an unlinked temporary file.
func parseSnapshot(ctx context.Context, repo *git.Repository, baseFiles map[string]treeEntry, r io.Reader, opts CommitOptions) (*snapshot, func(), error) {
	lim := snapshotLimits{maxFileSize: opts.MaxFileSize, maxEntries: opts.MaxEntries}
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
	spool, err := os.CreateTemp("", "runner-snapshot-*")
	if err != nil {
		return nil, nil, fmt.Errorf("create snapshot spool: %w", err)
	}
	// Unlinked at once where the OS allows it, so a killed process leaves
	// nothing behind; removed again after closing elsewhere.
	_ = os.Remove(spool.Name())
	cleanup := func() {
		_ = spool.Close()
		_ = os.Remove(spool.Name())
	}
	snap, err := readSnapshot(ctx, r, lim, known, spool)
	if err != nil {
		cleanup()
		return nil, nil, err
	}
	return snap, cleanup, nil
}

// writeBlobs stores the blobs of files the repository lacks.
func writeBlobs(ctx context.Context, repo *git.Repository, snap *snapshot, files map[string]treeEntry) error {
	written := make(map[plumbing.Hash]bool)
	for p, te := range files {
		e, ok := snap.entries[p]
		if !ok || e.kind == kindDir || e.hash != te.hash || e.stored || written[e.hash] {
			continue // from the base tree (gitlink), or already stored
		}
		if err := ctx.Err(); err != nil {
			return err
		}
		if err := writeBlob(repo.Storer, e.hash, e.size, snap.content(e)); err != nil {
			return fmt.Errorf("%s: %w", p, err)
		}
		written[e.hash] = true
	}
	return nil
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
	b, err := io.ReadAll(io.LimitReader(f, DefaultMaxFileSize))
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
