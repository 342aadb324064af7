package docker

import (
	"context"
	"fmt"
	"io/fs"
	"path"
	"sort"
	"strconv"
	"strings"

	"github.com/runner-dev/runner/sandbox"
	"github.com/runner-dev/runner/sandbox/channel"
)

// ReadFile returns the content of a regular file in the workspace. The file
// is opened and read by one process running as the sandbox user, which
// checks the file it opened (see files.sh), never a path that could change
// between a check and a use.
func (d *Sandbox) ReadFile(ctx context.Context, p string) ([]byte, error) {
	abs, err := resolve(p)
	if err != nil {
		return nil, err
	}
	if data, err, ok := fileChannel(ctx, d, func(ctx context.Context, c *channel.Client) ([]byte, error) { return c.ReadFile(ctx, abs) }); ok {
		return data, err
	}
	op := fileOp{name: "read", path: p, args: []string{abs, strconv.Itoa(sandbox.MaxReadSize)}, max: sandbox.MaxReadSize}
	res, err := d.runFile(ctx, op)
	if err != nil {
		return nil, err
	}
	if err := fileError(op, res); err != nil {
		return nil, err
	}
	if res.over {
		return nil, fmt.Errorf("read %s: %w: it grew past the limit of %d bytes while being read", p, sandbox.ErrTooLarge, sandbox.MaxReadSize)
	}
	return res.stdout, nil
}

// WriteFile writes data to a file in the workspace, creating its parents.
// The data travels on the stdin of one process running as the sandbox
// user, which creates or opens the file, checks the file it opened, and
// only then truncates and writes it (see files.sh).
func (d *Sandbox) WriteFile(ctx context.Context, p string, data []byte, mode fs.FileMode) error {
	abs, err := resolve(p)
	if err != nil {
		return err
	}
	if abs == sandbox.Workdir {
		return fmt.Errorf("write %s: %w", p, sandbox.ErrIsDir)
	}
	perm := "-"
	if mode&fs.ModePerm != 0 {
		perm = strconv.FormatUint(uint64(mode&fs.ModePerm), 8)
	}
	if data == nil {
		data = []byte{}
	}
	if _, err, ok := fileChannel(ctx, d, func(ctx context.Context, c *channel.Client) (struct{}, error) {
		return struct{}{}, c.WriteFile(ctx, abs, data, mode)
	}); ok {
		return err
	}
	op := fileOp{name: "write", path: p, args: []string{abs, strconv.Itoa(len(data)), perm}, stdin: data, max: 4 << 10}
	res, err := d.runFile(ctx, op)
	if err != nil {
		return err
	}
	return fileError(op, res)
}

// ListFiles lists dir, recursively if asked, leaving out the contents of
// .git directories.
func (d *Sandbox) ListFiles(ctx context.Context, dir string, recursive bool) ([]sandbox.FileInfo, error) {
	abs, err := resolve(dir)
	if err != nil {
		return nil, err
	}
	if files, err, ok := fileChannel(ctx, d, func(ctx context.Context, c *channel.Client) ([]sandbox.FileInfo, error) {
		return c.ListFiles(ctx, abs, recursive)
	}); ok {
		return files, err
	}
	depth := "1"
	if recursive {
		depth = "0"
	}
	op := fileOp{name: "list", path: dir, args: []string{abs, depth}, max: maxListing}
	res, err := d.runFile(ctx, op)
	if err != nil {
		return nil, err
	}
	if err := fileError(op, res); err != nil {
		return nil, err
	}
	if res.over {
		return nil, fmt.Errorf("list %s: too many entries; list a subdirectory", dir)
	}
	out := string(res.stdout)
	rel := strings.TrimPrefix(strings.TrimPrefix(abs, sandbox.Workdir), "/")
	var files []sandbox.FileInfo
	for _, line := range strings.Split(out, "\n") {
		modeHex, rest, ok1 := strings.Cut(line, " ")
		sizeStr, name, ok2 := strings.Cut(rest, " ")
		mode, err1 := strconv.ParseUint(modeHex, 16, 32)
		size, err2 := strconv.ParseInt(sizeStr, 10, 64)
		if !ok1 || !ok2 || err1 != nil || err2 != nil || !strings.HasPrefix(name, "./") {
			continue // a name with a newline in it; rare, and not worth a lie
		}
		name = path.Join(rel, strings.TrimPrefix(name, "./"))
		files = append(files, sandbox.FileInfo{Path: name, Type: unixType(uint32(mode)), Size: size})
	}
	sort.Slice(files, func(i, j int) bool { return files[i].Path < files[j].Path })
	return files, nil
}

// maxListing caps the output of one listing.
const maxListing = 64 << 20

// resolve turns a workspace-relative (or absolute, inside Workdir) path
// into an absolute one, refusing any that leaves Workdir.
func resolve(p string) (string, error) {
	if p == "" || p == "." {
		return sandbox.Workdir, nil
	}
	abs := path.Clean(p)
	if !path.IsAbs(p) {
		abs = path.Join(sandbox.Workdir, p)
	}
	if abs != sandbox.Workdir && !strings.HasPrefix(abs, sandbox.Workdir+"/") {
		return "", fmt.Errorf("%s: %w", p, sandbox.ErrOutsideWorkspace)
	}
	return abs, nil
}

// insideWorkdir checks a path as resolved inside the sandbox.
func insideWorkdir(p, real string) error {
	if real != sandbox.Workdir && !strings.HasPrefix(real, sandbox.Workdir+"/") {
		return fmt.Errorf("%s: resolves to %s through a symlink: %w", p, real, sandbox.ErrOutsideWorkspace)
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
