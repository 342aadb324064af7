package gitops

import (
	"context"
	"errors"
	"fmt"

	"github.com/go-git/go-git/v5/plumbing"
	"github.com/go-git/go-git/v5/plumbing/transport"
)

// RemoteBranchHead returns the commit branch points to on the remote, as
// `git ls-remote` sees it; found is false when the remote has no such
// branch (or no commits at all). Credentials are neither stored nor shown
// in errors.
func RemoteBranchHead(ctx context.Context, remote RemoteSpec, branch string) (hash plumbing.Hash, found bool, err error) {
	ref, err := branchRef(branch)
	if err != nil {
		return plumbing.ZeroHash, false, err
	}
	acc, err := remote.access()
	if err != nil {
		return plumbing.ZeroHash, false, fmt.Errorf("list %s: %w", remote.URL, err)
	}
	refs, err := listRemote(ctx, acc)
	if errors.Is(err, transport.ErrEmptyRemoteRepository) {
		return plumbing.ZeroHash, false, nil
	}
	if err != nil {
		return plumbing.ZeroHash, false, acc.secret.Error(fmt.Errorf("list the branches of %s: %w", acc.url, err))
	}
	for _, r := range refs {
		if r.Name() == ref && r.Type() == plumbing.HashReference {
			return r.Hash(), true, nil
		}
	}
	return plumbing.ZeroHash, false, nil
}
