package sandbox

import (
	"archive/tar"
	"bytes"
	"context"
	_ "embed"
	"fmt"
	"io"
	"io/fs"
	"path"
	"sort"
	"strconv"
	"strings"
	"time"

	cerrdefs "github.com/containerd/errdefs"
	"github.com/moby/moby/client"
)

//go:embed files.sh
var filesScript string

// fileOpTimeout bounds the helper command of one file operation.
const fileOpTimeout = 30 * time.Second

// ReadFile returns the content of a regular file in the workspace.
func (d *Docker) ReadFile(ctx context.Context, p string) ([]byte, error) {
	abs, err := resolve(p)
	if err != nil {
		return nil, err
	}
	out, err := d.fileHelper(ctx, p, "stat", Workdir, abs)
	if err != nil {
		return nil, err
	}
	modeHex, rest, _ := strings.Cut(out, " ")
	sizeStr, real, _ := strings.Cut(rest, " ")
	mode, err1 := strconv.ParseUint(modeHex, 16, 32)
	size, err2 := strconv.ParseInt(sizeStr, 10, 64)
	if err1 != nil || err2 != nil || real == "" {
		return nil, fmt.Errorf("read %s: unexpected answer from the sandbox: %q", p, out)
	}
	if err := insideWorkdir(p, real); err != nil {
		return nil, err
	}
	switch typ := unixType(uint32(mode)); {
	case typ == fs.ModeDir:
		return nil, fmt.Errorf("read %s: %w", p, ErrIsDir)
	case typ != 0:
		return nil, fmt.Errorf("read %s: %w", p, ErrNotRegular)
	case size > MaxReadSize:
		return nil, fmt.Errorf("read %s: %w: %d bytes, the limit is %d; read it in parts with a command", p, ErrTooLarge, size, MaxReadSize)
	}
	res, err := d.e.cli.CopyFromContainer(ctx, d.id, client.CopyFromContainerOptions{SourcePath: real})
	if err != nil {
		if cerrdefs.IsNotFound(err) {
			return nil, fmt.Errorf("read %s: %w", p, ErrNotFound)
		}
		return nil, d.e.explain("read "+p, "", err)
	}
	defer res.Content.Close()
	tr := tar.NewReader(res.Content)
	hdr, err := tr.Next()
	if err != nil {
		return nil, fmt.Errorf("read %s: %w", p, err)
	}
	if hdr.Typeflag != tar.TypeReg || hdr.Size > MaxReadSize {
		return nil, fmt.Errorf("read %s: changed while being read", p)
	}
	return io.ReadAll(tr)
}

// WriteFile writes data to a file in the workspace, creating its parents.
func (d *Docker) WriteFile(ctx context.Context, p string, data []byte, mode fs.FileMode) error {
	abs, err := resolve(p)
	if err != nil {
		return err
	}
	if abs == Workdir {
		return fmt.Errorf("write %s: %w", p, ErrIsDir)
	}
	out, err := d.fileHelper(ctx, p, "prepare", Workdir, abs)
	if err != nil {
		return err
	}
	oldMode, real, _ := strings.Cut(out, " ")
	if err := insideWorkdir(p, real); err != nil {
		return err
	}
	if mode&fs.ModePerm == 0 {
		mode = 0o644
		if m, err := strconv.ParseUint(oldMode, 8, 32); err == nil {
			mode = fs.FileMode(m)
		}
	}
	var buf bytes.Buffer
	tw := tar.NewWriter(&buf)
	hdr := &tar.Header{
		Name: path.Base(real), Typeflag: tar.TypeReg, Size: int64(len(data)),
		Mode: int64(mode & fs.ModePerm), Uid: d.uid, Gid: d.gid, ModTime: time.Now(),
	}
	if err := tw.WriteHeader(hdr); err != nil {
		return fmt.Errorf("write %s: %w", p, err)
	}
	tw.Write(data)
	if err := tw.Close(); err != nil {
		return fmt.Errorf("write %s: %w", p, err)
	}
	_, err = d.e.cli.CopyToContainer(ctx, d.id, client.CopyToContainerOptions{
		DestinationPath: path.Dir(real),
		Content:         &buf,
	})
	if err != nil {
		return d.e.explain("write "+p, "", err)
	}
	return nil
}

// ListFiles lists dir, recursively if asked, leaving out the contents of
// .git directories.
func (d *Docker) ListFiles(ctx context.Context, dir string, recursive bool) ([]FileInfo, error) {
	abs, err := resolve(dir)
	if err != nil {
		return nil, err
	}
	depth := "1"
	if recursive {
		depth = "0"
	}
	out, err := d.fileHelper(ctx, dir, "list", Workdir, abs, depth)
	if err != nil {
		return nil, err
	}
	rel := strings.TrimPrefix(strings.TrimPrefix(abs, Workdir), "/")
	var files []FileInfo
	for _, line := range strings.Split(out, "\n") {
		modeHex, rest, ok1 := strings.Cut(line, " ")
		sizeStr, name, ok2 := strings.Cut(rest, " ")
		mode, err1 := strconv.ParseUint(modeHex, 16, 32)
		size, err2 := strconv.ParseInt(sizeStr, 10, 64)
		if !ok1 || !ok2 || err1 != nil || err2 != nil || !strings.HasPrefix(name, "./") {
			continue // a name with a newline in it; rare, and not worth a lie
		}
		name = path.Join(rel, strings.TrimPrefix(name, "./"))
		files = append(files, FileInfo{Path: name, Type: unixType(uint32(mode)), Size: size})
	}
	sort.Slice(files, func(i, j int) bool { return files[i].Path < files[j].Path })
	return files, nil
}

// fileHelper runs files.sh with args and returns its output, mapping its
// exit codes to the package's errors. p is the path as the caller gave it.
func (d *Docker) fileHelper(ctx context.Context, p string, args ...string) (string, error) {
	cmd := "sh -c " + shellQuote(filesScript) + " runner-files"
	for _, a := range args {
		cmd += " " + shellQuote(a)
	}
	res, err := d.Exec(ctx, cmd, ExecOptions{Timeout: fileOpTimeout, MaxOutput: 64 << 20})
	if err != nil {
		return "", err
	}
	op := args[0]
	switch {
	case res.TimedOut:
		return "", fmt.Errorf("%s %s: timed out", op, p)
	case res.Truncated:
		return "", fmt.Errorf("%s %s: too many entries; list a subdirectory", op, p)
	}
	switch res.ExitCode {
	case 0:
		return res.Stdout, nil
	case 2:
		return "", fmt.Errorf("%s %s: %w", op, p, ErrNotFound)
	case 13:
		return "", fmt.Errorf("%s %s: %w", op, p, fs.ErrPermission)
	case 18:
		return "", fmt.Errorf("%s %s: resolves to %s through a symlink: %w", op, p, res.Stdout, ErrOutsideWorkspace)
	case 20:
		return "", fmt.Errorf("%s %s: %w", op, p, ErrNotDir)
	case 21:
		return "", fmt.Errorf("%s %s: %w", op, p, ErrIsDir)
	}
	return "", fmt.Errorf("%s %s: exit code %d: %s", op, p, res.ExitCode, strings.TrimSpace(res.Output))
}

// resolve turns a workspace-relative (or absolute, inside Workdir) path
// into an absolute one, refusing any that leaves Workdir.
func resolve(p string) (string, error) {
	if p == "" || p == "." {
		return Workdir, nil
	}
	abs := path.Clean(p)
	if !path.IsAbs(p) {
		abs = path.Join(Workdir, p)
	}
	if abs != Workdir && !strings.HasPrefix(abs, Workdir+"/") {
		return "", fmt.Errorf("%s: %w", p, ErrOutsideWorkspace)
	}
	return abs, nil
}

// insideWorkdir checks a path as resolved inside the sandbox.
func insideWorkdir(p, real string) error {
	if real != Workdir && !strings.HasPrefix(real, Workdir+"/") {
		return fmt.Errorf("%s: resolves to %s through a symlink: %w", p, real, ErrOutsideWorkspace)
	}
	return nil
}

// unixType converts the type bits of a raw st_mode.
func unixType(mode uint32) fs.FileMode {
	switch mode & 0o170000 {
	case 0o040000:
		return fs.ModeDir
	case 0o100000:
		return 0
	case 0o120000:
		return fs.ModeSymlink
	case 0o010000:
		return fs.ModeNamedPipe
	case 0o140000:
		return fs.ModeSocket
	case 0o020000:
		return fs.ModeDevice | fs.ModeCharDevice
	}
	return fs.ModeDevice
}

// shellQuote quotes s for sh.
func shellQuote(s string) string {
	return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
}
