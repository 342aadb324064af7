package fileops

import (
	"archive/tar"
	"bufio"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"time"
)

// TarBuffer gathers the many small writes of a tar stream (a 512-byte
// header per entry) into large ones, so that the stream reaches the
// sandbox in few chunks.
const TarBuffer = 256 << 10

// TarLayout names where the workspace goes in the tar stream: under Root
// ("workspace"), or at the top (".") when Root is empty; Home, when set, is
// a directory to add for the sandbox user.
type TarLayout struct{ Root, Home string }

// WriteWorkspaceTar writes dir as the workspace's entries, all owned by
// uid:gid. Modes, symlinks and modification times (to the second, as docker
// cp keeps them) are kept; sockets and devices are skipped. An empty dir
// gives an empty workspace.
func WriteWorkspaceTar(w io.Writer, dir string, uid, gid int, l TarLayout) error {
	bw := bufio.NewWriterSize(w, TarBuffer)
	if err := writeTar(bw, dir, uid, gid, l); err != nil {
		return err
	}
	return bw.Flush()
}

func writeTar(w io.Writer, dir string, uid, gid int, l TarLayout) error {
	tw := tar.NewWriter(w)
	root := l.Root
	if root == "" {
		root = "."
	}
	if l.Home != "" {
		if err := tw.WriteHeader(&tar.Header{Name: l.Home + "/", Typeflag: tar.TypeDir, Mode: 0o700, Uid: uid, Gid: gid}); err != nil {
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
