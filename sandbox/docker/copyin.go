package docker

import (
	"archive/tar"
	"bufio"
	"context"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/moby/moby/client"

	"github.com/runner-dev/runner/internal/panics"

	"github.com/runner-dev/runner/sandbox"
)

// copyIn copies the host directory dir into Workdir, owned by the sandbox
// user (and, without a disk limit, creates the user's home).
// The tree travels as a tar stream through the Engine API, so the engine may
// be remote.
func (d *Sandbox) copyIn(ctx context.Context, dir string) error {
	// Into the memory-backed workspace itself (the home is a mount of its
	// own), or into the writable layer, with the home, from the root.
	dest, layout := sandbox.Workdir, tarLayout{}
	if d.cfg.Disk < 0 {
		dest, layout = "/", tarLayout{root: strings.TrimPrefix(sandbox.Workdir, "/"), home: strings.TrimPrefix(sandbox.HomeDir, "/")}
	}
	pr, pw := io.Pipe()
	go func() {
		var err error
		defer func() { pw.CloseWithError(err) }()
		defer panics.Catch(ctx, &err)
		err = writeWorkspaceTar(pw, dir, sandbox.UID, sandbox.GID, layout)
	}()
	defer pr.Close()
	_, err := d.e.cli.CopyToContainer(ctx, d.id, client.CopyToContainerOptions{
		DestinationPath: dest,
		Content:         pr,
	})
	if err != nil {
		err = d.e.explain("copy workspace into sandbox", "", err)
		if d.cfg.Disk > 0 && strings.Contains(err.Error(), "no space left on device") {
			err = fmt.Errorf("%w (the workspace does not fit in the sandbox's disk limit of %d MiB: raise limits.disk, or set it to off)", err, d.cfg.Disk>>20)
		}
		return err
	}
	return nil
}

// tarBuffer gathers the many small writes of a tar stream (a 512-byte
// header per entry) into large ones, so that the stream reaches the engine
// in few chunks.
const tarBuffer = 256 << 10

// tarLayout names where the workspace goes in the tar stream: under root
// ("workspace"), or at the top (".") when root is empty; home, when set, is
// a directory to add for the sandbox user.
type tarLayout struct{ root, home string }

// writeWorkspaceTar writes dir as the workspace's entries, all owned by
// uid:gid. Modes, symlinks and modification times (to the second, as docker
// cp keeps them) are kept; sockets and devices are skipped.
func writeWorkspaceTar(w io.Writer, dir string, uid, gid int, l tarLayout) error {
	bw := bufio.NewWriterSize(w, tarBuffer)
	if err := writeTar(bw, dir, uid, gid, l); err != nil {
		return err
	}
	return bw.Flush()
}

func writeTar(w io.Writer, dir string, uid, gid int, l tarLayout) error {
	tw := tar.NewWriter(w)
	root := l.root
	if root == "" {
		root = "."
	}
	if l.home != "" {
		if err := tw.WriteHeader(&tar.Header{Name: l.home + "/", Typeflag: tar.TypeDir, Mode: 0o700, Uid: uid, Gid: gid}); err != nil {
			return err
		}
	}
	if dir == "" {
		if err := tw.WriteHeader(&tar.Header{Name: root + "/", Typeflag: tar.TypeDir, Mode: 0o755, Uid: uid, Gid: gid}); err != nil {
			return err
		}
		return tw.Close()
	}
	buf := make([]byte, 32<<10) // one copy buffer for every file
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
		// Whole seconds and no access or change time: a header then needs
		// no PAX record of its own (unless a name is long), which would
		// double the stream of a tree of small files.
		hdr.ModTime = hdr.ModTime.Truncate(time.Second)
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
		n, err := io.CopyBuffer(tw, io.LimitReader(f, hdr.Size), buf)
		if err == nil && n < hdr.Size {
			err = io.ErrUnexpectedEOF // the file shrank while it was read
		}
		if err != nil {
			return fmt.Errorf("%s: %w", p, err)
		}
		return nil
	})
	if err != nil {
		return fmt.Errorf("read workspace: %w", err)
	}
	return tw.Close()
}
