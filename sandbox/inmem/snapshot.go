package inmem

import (
	"archive/tar"
	"bytes"
	"context"
	"io"
	"sort"
	"time"

	"github.com/runner-dev/runner/sandbox"
)

// snapshotTime is the modification time of every entry of a snapshot.
var snapshotTime = time.Date(2020, 1, 1, 0, 0, 0, 0, time.UTC)

// Snapshot stops the sandbox and returns the workspace as a tar stream in
// the Docker backend's layout. See sandbox.Sandbox.
func (s *Sandbox) Snapshot(ctx context.Context) (io.ReadCloser, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return nil, sandbox.ErrClosed
	}
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	s.stopped = true
	names := make([]string, 0, len(s.tree.nodes))
	for k := range s.tree.nodes {
		names = append(names, k)
	}
	sort.Strings(names)
	var buf bytes.Buffer
	tw := tar.NewWriter(&buf)
	uid, gid := 1000, 1000
	for _, k := range names {
		n := s.tree.nodes[k]
		hdr := &tar.Header{Name: "./" + k, Mode: int64(n.perm), Uid: uid, Gid: gid, ModTime: snapshotTime, Format: tar.FormatPAX}
		switch n.kind {
		case kindDir:
			hdr.Typeflag = tar.TypeDir
			hdr.Name += "/"
			if k == "" {
				hdr.Name = "./"
			}
		case kindSymlink:
			hdr.Typeflag, hdr.Linkname = tar.TypeSymlink, n.target
		default:
			hdr.Typeflag, hdr.Size = tar.TypeReg, int64(len(n.data))
		}
		if err := tw.WriteHeader(hdr); err != nil {
			return nil, err
		}
		if n.kind == kindFile {
			if _, err := tw.Write(n.data); err != nil {
				return nil, err
			}
		}
	}
	if err := tw.Close(); err != nil {
		return nil, err
	}
	return io.NopCloser(&buf), nil
}
