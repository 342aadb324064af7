package gitops

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"strings"

	"github.com/go-git/go-git/v5/plumbing"
	"github.com/go-git/go-git/v5/plumbing/filemode"
	fdiff "github.com/go-git/go-git/v5/plumbing/format/diff"
	"github.com/go-git/go-git/v5/plumbing/object"
	"github.com/go-git/go-git/v5/utils/binary"
	"github.com/go-git/go-git/v5/utils/diff"
	dmp "github.com/sergi/go-diff/diffmatchpatch"
)

// DiffLimits bound the work and the size of a diff: a task's commit is
// the agent's work, and may hold anything.
type DiffLimits struct {
	// MaxFileBytes: a file larger than this on either side is listed, not
	// diffed. Default 256 KiB.
	MaxFileBytes int64
	// MaxFileLines cuts the lines shown of one file; default 1000.
	MaxFileLines int
	// MaxLines cuts the lines shown in all; the files past it are listed
	// with their counts only. Default 10000.
	MaxLines int
}

func (l DiffLimits) withDefaults() DiffLimits {
	if l.MaxFileBytes <= 0 {
		l.MaxFileBytes = 256 << 10
	}
	if l.MaxFileLines <= 0 {
		l.MaxFileLines = 1000
	}
	if l.MaxLines <= 0 {
		l.MaxLines = 10000
	}
	return l
}

// CommitDiff is what a commit changed against its first parent, per file,
// in git's unified format with three lines of context, renames detected
// as `git diff` does by default.
type CommitDiff struct {
	Commit, Parent string // Parent is empty for a root commit
	Files          []FileDiff
	// Added and Deleted count the lines of the files that were diffed.
	Added, Deleted int
}

// FileDiff is one file of a CommitDiff.
type FileDiff struct {
	// Path is the file's path after the commit (before it, for a deletion);
	// OldPath is set for a rename or copy.
	Path, OldPath string
	// Change is "added", "deleted", "modified" or "renamed".
	Change           string
	OldMode, NewMode string
	// Binary: git would say "Binary files differ"; Submodule: a gitlink.
	Binary, Submodule bool
	// Counted is set when Added and Deleted are known (a text file that
	// was diffed); git's --numstat shows the same numbers.
	Counted        bool
	Added, Deleted int
	// Lines is the diff's body: hunk headers and lines, each with its
	// first character ('@', '+', '-', ' ', '\\').
	Lines []string
	// Omitted counts the lines of the body cut by the limits; Note says
	// why a body is short or absent.
	Omitted int
	Note    string
}

// renameLimit is git's diff.renameLimit default: renames are looked for
// only when there are at most this many added and deleted files.
const renameLimit = 1000

// Diff reads, from the repository at repoPath, what commit changed against
// its first parent. Nothing is written to the repository and no git
// program is run.
func Diff(ctx context.Context, repoPath, commit string, lim DiffLimits) (*CommitDiff, error) {
	lim = lim.withDefaults()
	repo, err := openRepo(repoPath)
	if err != nil {
		return nil, err
	}
	h := plumbing.NewHash(commit)
	if h.IsZero() || h.String() != strings.ToLower(commit) {
		return nil, fmt.Errorf("diff of %q: not a commit hash", commit)
	}
	c, err := repo.CommitObject(h)
	if err != nil {
		return nil, fmt.Errorf("diff of %s in %s: %w", commit, repoPath, err)
	}
	tree, err := c.Tree()
	if err != nil {
		return nil, fmt.Errorf("diff of %s: %w", commit, err)
	}
	out := &CommitDiff{Commit: commit}
	parentTree := &object.Tree{}
	if len(c.ParentHashes) > 0 {
		p, err := c.Parent(0)
		if err != nil {
			return nil, fmt.Errorf("diff of %s: parent: %w", commit, err)
		}
		out.Parent = p.Hash.String()
		if parentTree, err = p.Tree(); err != nil {
			return nil, fmt.Errorf("diff of %s: parent: %w", commit, err)
		}
	}
	changes, err := treeChanges(ctx, parentTree, tree)
	if err != nil {
		return nil, fmt.Errorf("diff of %s: %w", commit, err)
	}
	shown := 0
	for _, ch := range changes {
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		f, err := fileDiff(repo.BlobObject, ch, lim)
		if err != nil {
			return nil, fmt.Errorf("diff of %s: %s: %w", commit, changeName(ch), err)
		}
		out.Added += f.Added
		out.Deleted += f.Deleted
		if left := lim.MaxLines - shown; len(f.Lines) > left {
			f.Omitted += len(f.Lines) - max(left, 0)
			f.Lines = f.Lines[:max(left, 0)]
			if f.Note == "" {
				f.Note = fmt.Sprintf("the diff is cut: it shows at most %d lines in all", lim.MaxLines)
			}
		}
		shown += len(f.Lines)
		out.Files = append(out.Files, f)
	}
	return out, nil
}

func changeName(ch *object.Change) string {
	if ch.To.Name != "" {
		return ch.To.Name
	}
	return ch.From.Name
}

// fileDiff diffs one change, unless a side is too large or a submodule.
func fileDiff(blob func(plumbing.Hash) (*object.Blob, error), ch *object.Change, lim DiffLimits) (FileDiff, error) {
	from, to := ch.From.TreeEntry, ch.To.TreeEntry
	f := FileDiff{Path: changeName(ch)}
	switch {
	case ch.From.Name == "":
		f.Change, f.NewMode = "added", to.Mode.String()
	case ch.To.Name == "":
		f.Change, f.OldMode = "deleted", from.Mode.String()
	default:
		f.Change, f.OldMode, f.NewMode = "modified", from.Mode.String(), to.Mode.String()
		if ch.From.Name != ch.To.Name {
			f.Change, f.OldPath = "renamed", ch.From.Name
		}
	}
	if from.Mode == filemode.Submodule || to.Mode == filemode.Submodule {
		f.Submodule = true
		f.Note = "a submodule: " + shortHash(from.Hash) + " → " + shortHash(to.Hash)
		return f, nil
	}
	var sides [2]fdiff.File
	var contents [2]string
	for i, e := range []object.ChangeEntry{ch.From, ch.To} {
		if e.Name == "" {
			continue
		}
		b, err := blob(e.TreeEntry.Hash)
		if err != nil {
			return f, err
		}
		if b.Size > lim.MaxFileBytes {
			f.Note = fmt.Sprintf("not shown: %s is %d bytes, over the %d shown", e.Name, b.Size, lim.MaxFileBytes)
			return f, nil
		}
		content, err := blobContent(b)
		if err != nil {
			return f, err
		}
		if bin, _ := binary.IsBinary(strings.NewReader(content)); bin {
			f.Binary = true
			return f, nil
		}
		sides[i], contents[i] = side{e.TreeEntry.Hash, e.TreeEntry.Mode}, content
	}
	body, err := unifiedBody(sides[0], sides[1], contents[0], contents[1])
	if err != nil {
		return f, err
	}
	f.Counted = true
	f.Lines, f.Added, f.Deleted, f.Omitted = hunkLines(body, lim.MaxFileLines)
	if f.Omitted > 0 {
		f.Note = fmt.Sprintf("the diff of this file is cut: it shows at most %d lines", lim.MaxFileLines)
	}
	return f, nil
}

// TextDiff is the unified diff of two texts, as the lines of its hunks
// (with their @@ headers, no file header) cut at maxLines (omitted counts
// the rest), and the lines added and deleted. It is the diff FileDiff
// shows, for a change that is not in a repository yet.
func TextDiff(old, new string, maxLines int) (lines []string, added, deleted, omitted int, err error) {
	var from, to fdiff.File
	if old != "" {
		from = side{plumbing.ComputeHash(plumbing.BlobObject, []byte(old)), filemode.Regular}
	}
	to = side{plumbing.ComputeHash(plumbing.BlobObject, []byte(new)), filemode.Regular}
	body, err := unifiedBody(from, to, old, new)
	if err != nil {
		return nil, 0, 0, 0, err
	}
	lines, added, deleted, omitted = hunkLines(body, maxLines)
	return lines, added, deleted, omitted, nil
}

// unifiedBody is the hunks of the unified diff from a to b (nil sides
// for an absent file), without the file header.
func unifiedBody(from, to fdiff.File, a, b string) (string, error) {
	p := textPatch{from: from, to: to}
	for _, d := range diff.Do(a, b) {
		op := fdiff.Equal
		switch d.Type {
		case dmp.DiffDelete:
			op = fdiff.Delete
		case dmp.DiffInsert:
			op = fdiff.Add
		}
		p.chunks = append(p.chunks, chunk{d.Text, op})
	}
	var buf bytes.Buffer
	if err := fdiff.NewUnifiedEncoder(&buf, fdiff.DefaultContextLines).Encode(p); err != nil {
		return "", err
	}
	body := buf.String()
	if i := strings.Index(body, "\n@@ "); i >= 0 {
		return body[i+1:], nil
	}
	return "", nil // a change of mode only
}

// hunkLines splits a diff body into lines, at most max of them kept, and
// counts the lines added and deleted.
func hunkLines(body string, max int) (lines []string, added, deleted, omitted int) {
	for line := range strings.Lines(body) {
		switch line = strings.TrimSuffix(line, "\n"); {
		case line == "":
			continue
		case line[0] == '+':
			added++
		case line[0] == '-':
			deleted++
		}
		if len(lines) < max {
			lines = append(lines, line)
		} else {
			omitted++
		}
	}
	return lines, added, deleted, omitted
}

func shortHash(h plumbing.Hash) string {
	if h.IsZero() {
		return "none"
	}
	return h.String()[:12]
}

// treeChanges lists what changed between two trees, with renames
// detected as git does. go-git's rename detection refuses names that git
// accepts (a line break in a name); the changes of such a tree are listed
// without renames.
func treeChanges(ctx context.Context, from, to *object.Tree) (object.Changes, error) {
	opts := *object.DefaultDiffTreeOptions
	opts.RenameLimit = renameLimit
	changes, err := object.DiffTreeWithOptions(ctx, from, to, &opts)
	if err != nil && ctx.Err() == nil {
		changes, err = object.DiffTreeWithOptions(ctx, from, to, &object.DiffTreeOptions{})
	}
	return changes, err
}

func blobContent(b *object.Blob) (string, error) {
	r, err := b.Reader()
	if err != nil {
		return "", err
	}
	defer r.Close()
	var buf strings.Builder
	buf.Grow(int(b.Size))
	if _, err := io.Copy(&buf, r); err != nil {
		return "", err
	}
	return buf.String(), nil
}

// textPatch is the patch of one text file, for the unified encoder. Its
// files are named "f": the encoder writes names in header lines, and a
// name holding a line break and "@@" would pass for a hunk. The body is
// what counts; the names are known.
type textPatch struct {
	from, to fdiff.File // nil for an absent side
	chunks   []fdiff.Chunk
}

func (p textPatch) FilePatches() []fdiff.FilePatch { return []fdiff.FilePatch{p} }
func (p textPatch) Message() string                { return "" }
func (p textPatch) IsBinary() bool                 { return false }
func (p textPatch) Files() (from, to fdiff.File)   { return p.from, p.to }
func (p textPatch) Chunks() []fdiff.Chunk          { return p.chunks }

type side struct {
	hash plumbing.Hash
	mode filemode.FileMode
}

func (s side) Hash() plumbing.Hash     { return s.hash }
func (s side) Mode() filemode.FileMode { return s.mode }
func (side) Path() string              { return "f" }

type chunk struct {
	content string
	op      fdiff.Operation
}

func (c chunk) Content() string       { return c.content }
func (c chunk) Type() fdiff.Operation { return c.op }
