package sandbox

import (
	"archive/tar"
	"context"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/moby/moby/client"
)

// copyIn copies the host directory dir into Workdir of the created (not yet
// started) container, owned by the sandbox user, and creates the user's home.
// The tree travels as a tar stream through the Engine API, so the engine may
// be remote.
func (d *Docker) copyIn(ctx context.Context, dir string) error {
	pr, pw := io.Pipe()
	go func() { pw.CloseWithError(writeWorkspaceTar(pw, dir, d.uid, d.gid)) }()
	defer pr.Close()
	_, err := d.e.cli.CopyToContainer(ctx, d.id, client.CopyToContainerOptions{
		DestinationPath: "/",
		Content:         pr,
	})
	if err != nil {
		return d.e.explain("copy workspace into sandbox", "", err)
	}
	return nil
}

// writeWorkspaceTar writes dir as "workspace/..." entries, plus the home
// directory, all owned by uid:gid. Modes, symlinks and modification times are
// kept; sockets and devices are skipped.
func writeWorkspaceTar(w io.Writer, dir string, uid, gid int) error {
	tw := tar.NewWriter(w)
	root := strings.TrimPrefix(Workdir, "/")
	home := strings.TrimPrefix(homeDir, "/")
	if err := tw.WriteHeader(&tar.Header{Name: home + "/", Typeflag: tar.TypeDir, Mode: 0o700, Uid: uid, Gid: gid}); err != nil {
		return err
	}
	if dir == "" {
		if err := tw.WriteHeader(&tar.Header{Name: root + "/", Typeflag: tar.TypeDir, Mode: 0o755, Uid: uid, Gid: gid}); err != nil {
			return err
		}
		return tw.Close()
	}
	err := filepath.WalkDir(dir, func(p string, e fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		info, err := e.Info()
		if err != nil {
			return err
		}
		rel, err := filepath.Rel(dir, p)
		if err != nil {
			return err
		}
		name := root
		if rel != "." {
			name = root + "/" + filepath.ToSlash(rel)
		}
		var link string
		switch {
		case info.Mode()&fs.ModeSymlink != 0:
			if link, err = os.Readlink(p); err != nil {
				return err
			}
		case info.Mode()&(fs.ModeDevice|fs.ModeNamedPipe|fs.ModeSocket|fs.ModeCharDevice) != 0:
			return nil
		}
		hdr, err := tar.FileInfoHeader(info, link)
		if err != nil {
			return fmt.Errorf("%s: %w", p, err)
		}
		hdr.Name = name
		if info.IsDir() {
			hdr.Name += "/"
		}
		hdr.Uid, hdr.Gid, hdr.Uname, hdr.Gname = uid, gid, "", ""
		hdr.AccessTime, hdr.ChangeTime = time.Time{}, time.Time{}
		hdr.Format = tar.FormatPAX
		if err := tw.WriteHeader(hdr); err != nil {
			return err
		}
		if !info.Mode().IsRegular() {
			return nil
		}
		f, err := os.Open(p)
		if err != nil {
			return err
		}
		defer f.Close()
		if _, err := io.CopyN(tw, f, hdr.Size); err != nil {
			return fmt.Errorf("%s: %w", p, err)
		}
		return nil
	})
	if err != nil {
		return fmt.Errorf("read workspace: %w", err)
	}
	return tw.Close()
}
