package channel

import (
	"archive/tar"
	"bufio"
	"context"
	"io"
	"os"
	"path"
	"sort"

	"golang.org/x/sys/unix"

	"github.com/runner-dev/runner/sandbox"
)

// tarChunk is the size of the data frames of a tar stream.
const tarChunk = 256 << 10

// streamTar writes a tar of the workspace (entry names "./", "./a/b", as
// the Engine's archive API gives them) in pieces to send. It walks the
// tree through directory descriptors without following symlinks, and
// stops when ctx ends. Files the sandbox user cannot read are left out.
func streamTar(ctx context.Context, send func([]byte) error) error {
	fd, err := openChecked("tar", sandbox.Workdir, unix.O_RDONLY|unix.O_DIRECTORY)
	if err != nil {
		return err
	}
	w := bufio.NewWriterSize(chunkWriter(send), tarChunk)
	tw := tar.NewWriter(w)
	if err := tw.WriteHeader(&tar.Header{Name: "./", Typeflag: tar.TypeDir, Mode: 0o755}); err != nil {
		unix.Close(fd)
		return err
	}
	if err := tarDir(ctx, tw, fd, "."); err != nil {
		return err
	}
	if err := tw.Close(); err != nil {
		return err
	}
	return w.Flush()
}

type chunkWriter func([]byte) error

func (c chunkWriter) Write(p []byte) (int, error) {
	if err := c(append([]byte(nil), p...)); err != nil {
		return 0, err
	}
	return len(p), nil
}

// tarDir adds the entries of the directory open on fd (and closes it).
func tarDir(ctx context.Context, tw *tar.Writer, fd int, prefix string) error {
	d := os.NewFile(uintptr(fd), prefix)
	defer d.Close()
	names, err := d.Readdirnames(-1)
	if err != nil {
		return err
	}
	sort.Strings(names)
	for _, name := range names {
		if err := ctx.Err(); err != nil {
			return err
		}
		var st unix.Stat_t
		if unix.Fstatat(fd, name, &st, unix.AT_SYMLINK_NOFOLLOW) != nil {
			continue
		}
		p := path.Join(prefix, name)
		h := &tar.Header{Name: "./" + p, Mode: int64(st.Mode & 0o7777), Uid: int(st.Uid), Gid: int(st.Gid)}
		switch st.Mode & unix.S_IFMT {
		case unix.S_IFDIR:
			h.Typeflag, h.Name = tar.TypeDir, h.Name+"/"
			sub, err := unix.Openat(fd, name, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_NOFOLLOW|openFlags, 0)
			if err != nil {
				continue
			}
			if err := tw.WriteHeader(h); err != nil {
				unix.Close(sub)
				return err
			}
			if err := tarDir(ctx, tw, sub, p); err != nil {
				return err
			}
		case unix.S_IFLNK:
			target, err := readlinkAt(fd, name)
			if err != nil {
				continue
			}
			h.Typeflag, h.Linkname = tar.TypeSymlink, target
			if err := tw.WriteHeader(h); err != nil {
				return err
			}
		case unix.S_IFREG:
			if err := tarFile(tw, fd, name, h); err != nil {
				return err
			}
		}
	}
	return nil
}

// tarFile adds the regular file name of directory fd, as long as it was
// when opened: a file that grows meanwhile is cut, one that shrinks padded.
func tarFile(tw *tar.Writer, dfd int, name string, h *tar.Header) error {
	fd, err := unix.Openat(dfd, name, unix.O_RDONLY|unix.O_NOFOLLOW|openFlags, 0)
	if err != nil {
		return nil
	}
	f := os.NewFile(uintptr(fd), name)
	defer f.Close()
	var st unix.Stat_t
	if unix.Fstat(fd, &st) != nil || st.Mode&unix.S_IFMT != unix.S_IFREG {
		return nil
	}
	h.Typeflag, h.Size = tar.TypeReg, st.Size
	if err := tw.WriteHeader(h); err != nil {
		return err
	}
	// A read that fails after the header leaves the file short: it is
	// padded, as one that shrank.
	n, _ := io.Copy(tw, io.LimitReader(f, st.Size))
	if n < st.Size {
		if _, err := io.CopyN(tw, zeros{}, st.Size-n); err != nil {
			return err
		}
	}
	return nil
}

type zeros struct{}

func (zeros) Read(p []byte) (int, error) {
	clear(p)
	return len(p), nil
}
