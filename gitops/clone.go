package gitops

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/go-git/go-billy/v5/osfs"
	"github.com/go-git/go-git/v5"
	"github.com/go-git/go-git/v5/config"
	"github.com/go-git/go-git/v5/plumbing"
	"github.com/go-git/go-git/v5/plumbing/cache"
	"github.com/go-git/go-git/v5/plumbing/transport"
	"github.com/go-git/go-git/v5/storage/filesystem"
	"github.com/go-git/go-git/v5/storage/memory"
)

// CloneOptions say what Clone fetches and where it puts it.
type CloneOptions struct {
	// URL of the repository: a local path, file://, http(s):// or ssh.
	// Credentials embedded in an http(s) URL are used as Auth when Auth has
	// no Token, and are never stored.
	URL string
	// Ref is a branch, a tag, a full ref name (refs/heads/x, refs/tags/x) or
	// a commit hash (full or abbreviated). Empty means the remote's HEAD.
	// Branches are tried before tags, as `git clone --branch` does.
	Ref string
	// Dir receives the worktree and its .git. It must be absent or empty;
	// the caller owns it and removes it when done.
	Dir string
	// Depth > 0 asks for a shallow, single-branch clone of that many commits
	// when Ref is a branch, a tag or empty. A commit hash always gets a full
	// clone, since servers need not serve an arbitrary commit by itself.
	Depth int
	// Auth carries the token or ssh key; see Credentials.
	Auth Credentials
}

// Workspace is a fresh clone: the directory to hand to the sandbox and the
// commit the agent's work will be based on.
type Workspace struct {
	Dir string
	// Base is the commit checked out in Dir.
	Base plumbing.Hash
	// Ref is the full name of the cloned branch or tag; empty when
	// CloneOptions.Ref was a commit hash.
	Ref plumbing.ReferenceName
	// RemoteURL is the URL recorded as "origin", with no credentials.
	RemoteURL string
	// Shallow reports a history truncated to CloneOptions.Depth.
	Shallow bool
	// Warnings name the attributes of checked-out files that were not
	// applied (a filter driver such as LFS, ident, a working tree
	// encoding): those files hold the bytes the repository stores.
	Warnings []string
}

// Clone clones opts.URL into opts.Dir and checks out opts.Ref. The clone's
// .git stays in the workspace so the agent can use git. Its config holds the
// redacted URL only: the token travels as HTTP basic auth and is never
// written, nor shown in an error. On failure Dir is left empty.
func Clone(ctx context.Context, opts CloneOptions) (ws *Workspace, err error) {
	if opts.Dir == "" {
		return nil, errors.New("clone: no destination directory")
	}
	if err := requireEmptyDir(opts.Dir); err != nil {
		return nil, err
	}
	acc, err := RemoteSpec{URL: opts.URL, Auth: opts.Auth}.access()
	if err != nil {
		return nil, fmt.Errorf("clone: %w", err)
	}
	defer func() {
		if err != nil {
			err = acc.secret.Error(err)
			emptyDir(opts.Dir)
		}
	}()

	if gitDir := localGitDir(opts.URL); gitDir != "" {
		ws, err := cloneLocal(ctx, gitDir, opts, acc.url)
		if err != nil {
			return nil, fmt.Errorf("clone %s: %w", acc.url, err)
		}
		return ws, nil
	}
	refs, err := listRemote(ctx, acc)
	if errors.Is(err, transport.ErrEmptyRemoteRepository) {
		return nil, fmt.Errorf("clone %s: %w", acc.url, ErrNoCommits)
	}
	if err != nil {
		return nil, fmt.Errorf("clone %s: list remote refs: %w", acc.url, err)
	}
	target, isCommit, err := resolveCloneRef(opts.Ref, refs)
	if err != nil {
		return nil, fmt.Errorf("clone %s: %w", acc.url, err)
	}

	// The checkout is ours (checkoutFresh): go-git's is several times
	// slower than git's on a tree of many files.
	co := &git.CloneOptions{URL: acc.url, Auth: acc.auth, ReferenceName: target, NoCheckout: true}
	shallow := opts.Depth > 0 && !isCommit
	if shallow {
		co.Depth, co.SingleBranch = opts.Depth, true
	}
	if isCommit {
		co.ReferenceName = ""
	}
	// The checkout reads every blob: with KeepDescriptors the pack is
	// opened once, not once per object.
	st := filesystem.NewStorageWithOptions(osfs.New(filepath.Join(opts.Dir, git.GitDirName)),
		cache.NewObjectLRUDefault(), filesystem.Options{KeepDescriptors: true})
	defer st.Close()
	repo, err := git.CloneContext(ctx, st, osfs.New(opts.Dir), co)
	if err != nil {
		return nil, fmt.Errorf("clone %s: %w", acc.url, err)
	}
	if isCommit {
		if err := detachHead(repo, opts.Ref); err != nil {
			return nil, fmt.Errorf("clone %s: %w", acc.url, err)
		}
		target = ""
	}
	head, err := repo.ResolveRevision(plumbing.Revision(plumbing.HEAD))
	if err != nil {
		return nil, fmt.Errorf("clone %s: resolve HEAD: %w", acc.url, err)
	}
	notes, err := checkoutFresh(ctx, repo, repo.Storer, opts.Dir, *head)
	if err != nil {
		return nil, fmt.Errorf("clone %s: %w", acc.url, err)
	}
	if target == plumbing.HEAD {
		target = ""
	}
	return &Workspace{Dir: opts.Dir, Base: *head, Ref: target, RemoteURL: acc.url, Shallow: shallow, Warnings: notes}, nil
}

func listRemote(ctx context.Context, acc remoteAccess) ([]*plumbing.Reference, error) {
	rem := git.NewRemote(memory.NewStorage(), &config.RemoteConfig{
		Name: git.DefaultRemoteName,
		URLs: []string{acc.url},
	})
	return rem.ListContext(ctx, &git.ListOptions{Auth: acc.auth})
}

// resolveCloneRef maps the user's ref onto an advertised branch or tag, or
// reports that it must be a commit hash.
func resolveCloneRef(ref string, refs []*plumbing.Reference) (name plumbing.ReferenceName, isCommit bool, err error) {
	byName := make(map[plumbing.ReferenceName]*plumbing.Reference, len(refs))
	for _, r := range refs {
		byName[r.Name()] = r
	}
	if ref == "" {
		if head, ok := byName[plumbing.HEAD]; ok && head.Type() == plumbing.SymbolicReference {
			return head.Target(), false, nil
		}
		return plumbing.HEAD, false, nil
	}
	candidates := []plumbing.ReferenceName{
		plumbing.NewBranchReferenceName(ref),
		plumbing.NewTagReferenceName(ref),
	}
	if strings.HasPrefix(ref, "refs/") {
		candidates = []plumbing.ReferenceName{plumbing.ReferenceName(ref)}
	}
	for _, c := range candidates {
		if _, ok := byName[c]; ok && (c.IsBranch() || c.IsTag()) {
			return c, false, nil
		}
	}
	if looksLikeHash(ref) {
		return "", true, nil
	}
	return "", false, fmt.Errorf("%w: %q is not a branch, tag or commit of the repository", ErrRefNotFound, ref)
}

func looksLikeHash(s string) bool {
	if len(s) < 4 || len(s) > 64 {
		return false
	}
	for _, c := range s {
		if !strings.ContainsRune("0123456789abcdefABCDEF", c) {
			return false
		}
	}
	return true
}

// detachHead points HEAD at the commit named by hash.
func detachHead(repo *git.Repository, hash string) error {
	h, err := repo.ResolveRevision(plumbing.Revision(strings.ToLower(hash)))
	if err == nil {
		_, err = repo.CommitObject(*h)
	}
	if err != nil {
		return fmt.Errorf("%w: commit %q not found in the cloned history", ErrRefNotFound, hash)
	}
	if err := repo.Storer.SetReference(plumbing.NewHashReference(plumbing.HEAD, *h)); err != nil {
		return fmt.Errorf("detach HEAD at %s: %w", h, err)
	}
	return nil
}

func requireEmptyDir(dir string) error {
	entries, err := os.ReadDir(dir)
	switch {
	case errors.Is(err, os.ErrNotExist):
		return nil
	case err != nil:
		return fmt.Errorf("clone: read destination: %w", err)
	case len(entries) > 0:
		return fmt.Errorf("clone into %s: %w", dir, ErrDirNotEmpty)
	}
	return nil
}

// emptyDir removes what a failed clone left in dir, keeping dir itself.
func emptyDir(dir string) {
	entries, err := os.ReadDir(dir)
	if err != nil {
		return
	}
	for _, e := range entries {
		_ = os.RemoveAll(filepath.Join(dir, e.Name()))
	}
}
