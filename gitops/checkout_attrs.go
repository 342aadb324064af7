package gitops

import (
	"fmt"
	"io"

	"github.com/go-git/go-git/v5"
	"github.com/go-git/go-git/v5/plumbing"
	"github.com/go-git/go-git/v5/plumbing/filemode"
	"github.com/go-git/go-git/v5/plumbing/object"
	"github.com/go-git/go-git/v5/plumbing/storer"
)

// checkoutAttrs are the attributes of the tree a checkout writes, gathered
// directory by directory as the walk enters them (a directory's entry comes
// before the files it holds).
type checkoutAttrs struct {
	attrs   *gitAttributes
	unusual attrNotes
}

// newCheckoutAttrs starts with the root .gitattributes of tree. A fresh
// clone has no info/attributes, so none is read.
func newCheckoutAttrs(repo *git.Repository, tree *object.Tree) (*checkoutAttrs, error) {
	root, err := attrFileOf(repo.Storer, tree)
	if err != nil {
		return nil, err
	}
	a, err := newGitAttributes(root, attrFromBlob, nil)
	if err != nil {
		return nil, err
	}
	return &checkoutAttrs{attrs: a}, nil
}

// enterDir adds the .gitattributes of the directory dir, whose tree is h.
func (c *checkoutAttrs) enterDir(repo *git.Repository, dir string, h plumbing.Hash) error {
	t, err := object.GetTree(repo.Storer, h)
	if err != nil {
		return err
	}
	content, err := attrFileOf(repo.Storer, t)
	if err != nil || content == nil {
		return err
	}
	return c.attrs.addDir(dir, content, attrFromBlob)
}

// action returns the line-ending conversion of the regular file p and
// notes its unsupported attributes.
func (c *checkoutAttrs) action(p string) crlfAction {
	if c.attrs.empty() {
		return crlfBinary
	}
	pa := c.attrs.lookup(p)
	c.unusual.record(p, pa)
	return pa.action()
}

func (c *checkoutAttrs) notes() []string {
	return c.unusual.list("checked out as stored")
}

// attrFileOf returns the content of the .gitattributes entry of tree t, nil
// if it has none. Like git reading the index, it takes any blob there, a
// symlink's target included; one of attrMaxFile bytes or more is ignored.
func attrFileOf(s storer.EncodedObjectStorer, t *object.Tree) ([]byte, error) {
	for _, e := range t.Entries {
		if e.Name != ".gitattributes" {
			continue
		}
		if e.Mode == filemode.Dir || e.Mode == filemode.Submodule {
			return nil, nil
		}
		return readAttrBlob(s, e.Hash)
	}
	return nil, nil
}

// readAttrBlob reads the blob h of an attributes file, or nothing if it
// is too large for git to read.
func readAttrBlob(s storer.EncodedObjectStorer, h plumbing.Hash) ([]byte, error) {
	b, err := object.GetBlob(s, h)
	if err != nil {
		return nil, fmt.Errorf("read .gitattributes: %w", err)
	}
	if b.Size >= attrMaxFile {
		return nil, nil
	}
	r, err := b.Reader()
	if err != nil {
		return nil, fmt.Errorf("read .gitattributes: %w", err)
	}
	defer r.Close()
	content, err := io.ReadAll(r)
	if err != nil {
		return nil, fmt.Errorf("read .gitattributes: %w", err)
	}
	return content, nil
}

// readBlob copies the content of blob to w.
func readBlob(blob *object.Blob, w io.Writer) error {
	r, err := blob.Reader()
	if err != nil {
		return err
	}
	defer r.Close()
	_, err = io.Copy(w, r)
	return err
}
