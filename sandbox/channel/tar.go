package channel

import (
	"archive/tar"
	"bufio"
	"context"
	"fmt"
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
// the Engine's archive API gives them) in pieces to send, entry for entry
// as that archive would hold them: regular files, directories, symlinks
// (never followed), named pipes and device nodes, a hard link after the
// first of its names, sockets left out, each with its owner and mode. It
// walks the tree through directory descriptors and stops when ctx ends.
// An entry it cannot read fails it; one that vanishes while it walks
// (the sandbox runs) is left out.
//
// With freeze, as for a snapshot, it first stops every other process of
// the sandbox (freezeOthers), then gives back to what the sandbox user
// owns and made unreadable, even to itself, its owner's read (and, for
// directories, search) permission (makeReadable); an entry another user
// owns that it cannot read fails it, before any byte is sent.
func streamTar(ctx context.Context, send func([]byte) error, freeze bool) error {
	orig := map[string]uint32{}
	if freeze {
		if err := freezeOthers(ctx); err != nil {
			return err
		}
		fixes, err := makeReadable(ctx)
		defer restoreModes(fixes)
		if err != nil {
			return err
		}
		for _, f := range fixes {
			orig[f.name] = f.mode
		}
	}
	fd, err := openChecked("tar", sandbox.Workdir, unix.O_RDONLY|unix.O_DIRECTORY)
	if err != nil {
		return err
	}
	var st unix.Stat_t
	if err := unix.Fstat(fd, &st); err != nil {
		unix.Close(fd)
		return err
	}
	w := bufio.NewWriterSize(chunkWriter(send), tarChunk)
	t := &tarWalk{tw: tar.NewWriter(w), links: map[[2]uint64]string{}, orig: orig}
	if err := t.tw.WriteHeader(&tar.Header{Name: "./", Typeflag: tar.TypeDir, Mode: t.mode("./", st.Mode), Uid: int(st.Uid), Gid: int(st.Gid)}); err != nil {
		unix.Close(fd)
		return err
	}
	if err := t.dir(ctx, fd, "."); err != nil {
		return err
	}
	if err := t.tw.Close(); err != nil {
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

// tarWalk is one tar being written: the writer, the first name of every
// file with more than one link, and the modes entries had before
// makeReadable.
type tarWalk struct {
	tw    *tar.Writer
	links map[[2]uint64]string
	orig  map[string]uint32
}

// mode is the permission bits of entry name (without a directory's
// trailing slash), as they were before makeReadable, given its mode now.
func (t *tarWalk) mode(name string, now uint32) int64 {
	if m, ok := t.orig[name]; ok {
		return int64(m)
	}
	return int64(now & 0o7777)
}

// dir adds the entries of the directory open on fd (and closes it).
func (t *tarWalk) dir(ctx context.Context, fd int, prefix string) error {
	d := os.NewFile(uintptr(fd), prefix)
	defer d.Close()
	names, err := d.Readdirnames(-1)
	if err != nil {
		return fmt.Errorf("tar: list %s: %w", prefix, err)
	}
	sort.Strings(names)
	for _, name := range names {
		if err := ctx.Err(); err != nil {
			return err
		}
		var st unix.Stat_t
		if err := unix.Fstatat(fd, name, &st, unix.AT_SYMLINK_NOFOLLOW); err != nil {
			if err == unix.ENOENT {
				continue
			}
			return fmt.Errorf("tar: %s: %w", path.Join(prefix, name), err)
		}
		p := path.Join(prefix, name)
		h := &tar.Header{Name: "./" + p, Mode: t.mode("./"+p, st.Mode), Uid: int(st.Uid), Gid: int(st.Gid)}
		var err error
		switch st.Mode & unix.S_IFMT {
		case unix.S_IFDIR:
			h.Typeflag, h.Name = tar.TypeDir, h.Name+"/"
			sub, oerr := unix.Openat(fd, name, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_NOFOLLOW|openFlags, 0)
			if oerr == unix.ENOENT {
				continue
			}
			if oerr != nil {
				return fmt.Errorf("tar: %s: %w", p, oerr)
			}
			if err := t.tw.WriteHeader(h); err != nil {
				unix.Close(sub)
				return err
			}
			err = t.dir(ctx, sub, p)
		case unix.S_IFLNK:
			target, lerr := readlinkAt(fd, name)
			if lerr == unix.ENOENT {
				continue
			}
			if lerr != nil {
				return fmt.Errorf("tar: %s: %w", p, lerr)
			}
			h.Typeflag, h.Linkname = tar.TypeSymlink, target
			err = t.tw.WriteHeader(h)
		case unix.S_IFREG:
			key := [2]uint64{uint64(st.Dev), st.Ino}
			if first, ok := t.links[key]; ok {
				h.Typeflag, h.Linkname = tar.TypeLink, first
				err = t.tw.WriteHeader(h)
				break
			}
			if st.Nlink > 1 {
				t.links[key] = h.Name
			}
			err = tarFile(t.tw, fd, name, h)
		case unix.S_IFIFO:
			h.Typeflag = tar.TypeFifo
			err = t.tw.WriteHeader(h)
		case unix.S_IFCHR, unix.S_IFBLK:
			h.Typeflag = tar.TypeChar
			if st.Mode&unix.S_IFMT == unix.S_IFBLK {
				h.Typeflag = tar.TypeBlock
			}
			h.Devmajor, h.Devminor = int64(unix.Major(uint64(st.Rdev))), int64(unix.Minor(uint64(st.Rdev)))
			err = t.tw.WriteHeader(h)
		}
		if err != nil {
			return err
		}
	}
	return nil
}

// tarFile adds the regular file name of directory fd, as long as it was
// when opened: a file that grows meanwhile is cut, one that shrinks padded.
func tarFile(tw *tar.Writer, dfd int, name string, h *tar.Header) error {
	fd, err := unix.Openat(dfd, name, unix.O_RDONLY|unix.O_NOFOLLOW|openFlags, 0)
	if err == unix.ENOENT {
		return nil
	}
	if err != nil {
		return fmt.Errorf("tar: %s: %w", h.Name, err)
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
