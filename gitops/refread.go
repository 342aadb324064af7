package gitops

import (
	"errors"
	"time"

	"github.com/go-git/go-git/v5/plumbing"
	"github.com/go-git/go-git/v5/storage/filesystem/dotgit"
)

// Reading the refs while another task writes one: go-git lists every
// file under refs/, the lock file of a branch being written (empty until
// it is renamed or removed) included, and rewrites a ref file in place;
// either is read as ErrEmptyRefFile for the moment the write takes. The
// attempts of a best-of-n task, and tasks sharing a repository, clone it
// while others commit to it, so the listing is read again until it is
// whole, for up to refSettle.
const (
	refSettle     = 5 * time.Second
	refSettleWait = 5 * time.Millisecond
)

// settledRefs runs list until it does not meet a ref file being written.
func settledRefs(list func() ([]*plumbing.Reference, error)) ([]*plumbing.Reference, error) {
	deadline := time.Now().Add(refSettle)
	for {
		refs, err := list()
		if !errors.Is(err, dotgit.ErrEmptyRefFile) || time.Now().After(deadline) {
			return refs, err
		}
		time.Sleep(refSettleWait)
	}
}
