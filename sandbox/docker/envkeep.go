package docker

import (
	"archive/tar"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"path"
	"sort"
	"strings"

	"github.com/moby/moby/api/types/container"
	"github.com/moby/moby/client"

	"github.com/runner-dev/runner/internal/panics"
	"github.com/runner-dev/runner/sandbox"
)

// keepWorkspace copies the entries of the setup's workspace that keep
// selects to envDir/workspace, owned by the sandbox user. The workspace
// tar is what setup's commands wrote: names are cleaned and checked, and
// only directories, regular files, symbolic links and hard links to kept
// files pass; a kept directory is kept whole.
func (d *Sandbox) keepWorkspace(ctx context.Context, keep func(string, bool) bool) error {
	if keep == nil {
		return nil
	}
	var mk strings.Builder
	if code, err := d.rootExec(ctx, "mkdir -p "+envDir, nil, &mk); err != nil || code != 0 {
		return fmt.Errorf("setup: create %s: exit %d: %v: %s", envDir, code, err, mk.String())
	}
	src, err := d.e.cli.CopyFromContainer(ctx, d.id, client.CopyFromContainerOptions{SourcePath: sandbox.Workdir})
	if err != nil {
		return d.e.explain("copy the setup's workspace", "", err)
	}
	defer src.Content.Close()
	pr, pw := io.Pipe()
	go func() {
		var err error
		defer func() { pw.CloseWithError(err) }()
		defer panics.Catch(ctx, &err)
		err = filterKept(tar.NewReader(src.Content), tar.NewWriter(pw), keep)
	}()
	defer pr.Close()
	if _, err := d.e.cli.CopyToContainer(ctx, d.id, client.CopyToContainerOptions{DestinationPath: envDir, Content: pr}); err != nil {
		return d.e.explain("keep the setup's workspace additions", "", err)
	}
	return nil
}

// filterKept copies the entries of the workspace tar r ("workspace/...")
// that keep selects to w, under "workspace/".
func filterKept(r *tar.Reader, w *tar.Writer, keep func(string, bool) bool) error {
	root := path.Base(sandbox.Workdir)
	keptDirs := map[string]bool{}
	kept := map[string]bool{}
	under := func(p string) bool {
		for q := path.Dir(p); q != "."; q = path.Dir(q) {
			if keptDirs[q] {
				return true
			}
		}
		return false
	}
	for {
		h, err := r.Next()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return fmt.Errorf("read the setup's workspace: %w", err)
		}
		name := strings.TrimSuffix(h.Name, "/")
		rel, ok := strings.CutPrefix(name, root+"/")
		if !ok || rel == "" || path.Clean(rel) != rel || rel == ".." || strings.HasPrefix(rel, "../") || rel == ".git" || strings.HasPrefix(rel, ".git/") {
			continue
		}
		dir := h.Typeflag == tar.TypeDir
		switch h.Typeflag {
		case tar.TypeDir, tar.TypeReg, tar.TypeSymlink:
		case tar.TypeLink:
			target := strings.TrimPrefix(strings.TrimSuffix(h.Linkname, "/"), root+"/")
			if !kept[target] {
				continue
			}
			h.Linkname = root + "/" + target
		default:
			continue
		}
		if !under(rel) {
			if !keep(rel, dir) {
				continue
			}
			keptDirs[rel] = dir
		}
		if h.Typeflag == tar.TypeReg {
			kept[rel] = true
		}
		hdr := &tar.Header{Typeflag: h.Typeflag, Name: root + "/" + rel, Linkname: h.Linkname, Size: h.Size,
			Mode: h.Mode & 0o777, ModTime: h.ModTime, Uid: sandbox.UID, Gid: sandbox.GID, Format: tar.FormatPAX}
		if dir {
			hdr.Name += "/"
		}
		if h.Typeflag != tar.TypeReg {
			hdr.Size = 0
		}
		if err := w.WriteHeader(hdr); err != nil {
			return err
		}
		if h.Typeflag == tar.TypeReg {
			if _, err := io.Copy(w, r); err != nil {
				return err
			}
		}
	}
	return w.Close()
}

// findSecrets fails with sandbox.ErrSecretLeft when a secret value is in
// a file the stopped setup container added or changed (the layer its
// image would be made of), in its content, its name or a link's target.
func (d *Sandbox) findSecrets(ctx context.Context, secrets []string) error {
	if len(secrets) == 0 {
		return nil
	}
	diff, err := d.e.cli.ContainerDiff(ctx, d.id, client.ContainerDiffOptions{})
	if err != nil {
		return d.e.explain("list the setup's changes", "", err)
	}
	changes := diff.Changes
	sort.Slice(changes, func(i, j int) bool { return changes[i].Path < changes[j].Path })
	var covered string // an added directory whose whole tree was scanned
	for _, c := range changes {
		if c.Kind == container.ChangeDelete || covered != "" && strings.HasPrefix(c.Path, covered+"/") {
			continue
		}
		if hasSecret([]byte(c.Path), secrets) {
			return secretError(c.Path, secrets)
		}
		whole, err := d.scanPath(ctx, c.Path, c.Kind == container.ChangeAdd, secrets)
		if err != nil {
			return err
		}
		if whole {
			covered = c.Path
		}
	}
	return nil
}

// scanPath looks for secrets in the tree at p (tree set) or, for a
// directory whose listing alone changed, in nothing more. whole reports a
// directory scanned whole.
func (d *Sandbox) scanPath(ctx context.Context, p string, tree bool, secrets []string) (whole bool, err error) {
	res, err := d.e.cli.CopyFromContainer(ctx, d.id, client.CopyFromContainerOptions{SourcePath: p})
	if err != nil {
		return false, nil // gone, or not readable through the archive API: not in the image either
	}
	defer res.Content.Close()
	tr := tar.NewReader(res.Content)
	first := true
	for {
		h, err := tr.Next()
		if errors.Is(err, io.EOF) {
			return tree, nil
		}
		if err != nil {
			return false, fmt.Errorf("read the setup's changes at %s: %w", p, err)
		}
		if first && h.Typeflag == tar.TypeDir && !tree {
			return false, nil
		}
		first = false
		where := path.Join(path.Dir(p), h.Name)
		if hasSecret([]byte(h.Name), secrets) || hasSecret([]byte(h.Linkname), secrets) {
			return false, secretError(where, secrets)
		}
		if h.Typeflag == tar.TypeReg {
			found, err := readerHasSecret(tr, secrets)
			if err != nil {
				return false, fmt.Errorf("read the setup's changes at %s: %w", where, err)
			}
			if found {
				return false, secretError(where, secrets)
			}
		}
	}
}

func secretError(where string, secrets []string) error {
	for _, s := range secrets {
		where = strings.ReplaceAll(where, s, "[secret]")
	}
	return fmt.Errorf("%w: the value of a secret of setup_env is in %s; nothing was kept (make setup remove it, e.g. a token written to a config file, before it ends)", sandbox.ErrSecretLeft, where)
}

func hasSecret(b []byte, secrets []string) bool {
	for _, s := range secrets {
		if bytes.Contains(b, []byte(s)) {
			return true
		}
	}
	return false
}

// readerHasSecret scans r in chunks, keeping enough of each chunk's end
// to find a secret that straddles two.
func readerHasSecret(r io.Reader, secrets []string) (bool, error) {
	longest := 0
	for _, s := range secrets {
		longest = max(longest, len(s))
	}
	buf := make([]byte, 0, 64<<10+longest)
	chunk := make([]byte, 64<<10)
	for {
		n, err := r.Read(chunk)
		buf = append(buf, chunk[:n]...)
		if hasSecret(buf, secrets) {
			return true, nil
		}
		if keep := longest - 1; len(buf) > keep {
			buf = append(buf[:0], buf[len(buf)-keep:]...)
		}
		if errors.Is(err, io.EOF) {
			return false, nil
		}
		if err != nil {
			return false, err
		}
	}
}
