package gitops

import (
	"fmt"
	"io"

	"github.com/go-git/go-git/v5"
	"github.com/go-git/go-git/v5/plumbing"
	"github.com/go-git/go-git/v5/plumbing/object"
)

// raw returns the content of e as the snapshot held it: from the spool, or
// from the repository when it already had the blob.
func (s *snapshot) raw(repo *git.Repository, e *snapEntry) (io.ReadCloser, error) {
	if e.unspooled {
		return nil, fmt.Errorf("%s: %w", e.raw, errNotSpooled)
	}
	if !e.stored {
		return io.NopCloser(s.content(e)), nil
	}
	return blobReader(repo, e.hash)
}

func blobReader(repo *git.Repository, h plumbing.Hash) (io.ReadCloser, error) {
	b, err := object.GetBlob(repo.Storer, h)
	if err != nil {
		return nil, fmt.Errorf("read blob %s: %w", h, err)
	}
	return b.Reader()
}
