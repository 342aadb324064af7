// Package fileops is what every backend that runs real processes shares
// to do the file tools inside the sandbox: the file helper script
// (files.sh), run as the sandbox user so that the kernel's permission
// checks apply and the race of a path swapped under a check cannot lead
// outside the workspace; the encoding of its operations and results; the
// tar stream that carries a host directory into the workspace; and the
// scripts that install trusted certificates and checkpoint the workspace.
// A backend only has to run a script with stdin and stdout attached.
package fileops

import (
	"bytes"
	_ "embed"
	"fmt"
	"io/fs"
	"path"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/runner-dev/runner/sandbox"
)

// Script is the file helper, a POSIX sh script; see its header. Run it as
// the sandbox user: sh -c Script runner-files OP WORKDIR ARGS..., that is
// Op.Command().
//
//go:embed files.sh
var Script string

// Op is one run of the file helper.
type Op struct {
	Name  string   // "read", "write" or "list"
	Path  string   // the path as the caller gave it, for messages
	Args  []string // after the operation's name and the workspace
	Stdin []byte   // sent on the helper's stdin, then closed; nil for none
	Max   int      // stdout beyond this many bytes is dropped and flagged
}

// Result is what the helper said.
type Result struct {
	Code     int
	Stdout   []byte
	Over     bool // Stdout went past Op.Max
	Stderr   string
	TimedOut bool // the host gave up on it (and killed it)
}

// Command is the argv that runs op.
func (op Op) Command() []string {
	return append([]string{"sh", "-c", Script, "runner-files", op.Name, sandbox.Workdir}, op.Args...)
}

// MaxListing caps the output of one listing.
const MaxListing = 64 << 20

// ReadOp reads the file p (abs as Resolve gave it).
func ReadOp(p, abs string) Op {
	return Op{Name: "read", Path: p, Args: []string{abs, strconv.Itoa(sandbox.MaxReadSize)}, Max: sandbox.MaxReadSize}
}

// WriteOp writes data to the file p (abs as Resolve gave it) with mode, 0
// keeping an existing file's.
func WriteOp(p, abs string, data []byte, mode fs.FileMode) Op {
	perm := "-"
	if mode&fs.ModePerm != 0 {
		perm = strconv.FormatUint(uint64(mode&fs.ModePerm), 8)
	}
	if data == nil {
		data = []byte{}
	}
	return Op{Name: "write", Path: p, Args: []string{abs, strconv.Itoa(len(data)), perm}, Stdin: data, Max: 4 << 10}
}

// ListOp lists dir (abs as Resolve gave it), recursively if asked.
func ListOp(dir, abs string, recursive bool) Op {
	depth := "1"
	if recursive {
		depth = "0"
	}
	return Op{Name: "list", Path: dir, Args: []string{abs, depth}, Max: MaxListing}
}

// ReadData is the content a read returned, or its error.
func ReadData(op Op, res Result, timeout time.Duration) ([]byte, error) {
	if err := Error(op, res, timeout); err != nil {
		return nil, err
	}
	if res.Over {
		return nil, fmt.Errorf("read %s: %w: it grew past the limit of %d bytes while being read", op.Path, sandbox.ErrTooLarge, sandbox.MaxReadSize)
	}
	return res.Stdout, nil
}

// Listing is the entries a list of abs returned, sorted, or its error.
func Listing(op Op, abs string, res Result, timeout time.Duration) ([]sandbox.FileInfo, error) {
	if err := Error(op, res, timeout); err != nil {
		return nil, err
	}
	if res.Over {
		return nil, fmt.Errorf("list %s: too many entries; list a subdirectory", op.Path)
	}
	rel := strings.TrimPrefix(strings.TrimPrefix(abs, sandbox.Workdir), "/")
	var files []sandbox.FileInfo
	for _, line := range strings.Split(string(res.Stdout), "\n") {
		modeHex, rest, ok1 := strings.Cut(line, " ")
		sizeStr, name, ok2 := strings.Cut(rest, " ")
		mode, err1 := strconv.ParseUint(modeHex, 16, 32)
		size, err2 := strconv.ParseInt(sizeStr, 10, 64)
		if !ok1 || !ok2 || err1 != nil || err2 != nil || !strings.HasPrefix(name, "./") {
			continue // a name with a newline in it; rare, and not worth a lie
		}
		name = path.Join(rel, strings.TrimPrefix(name, "./"))
		files = append(files, sandbox.FileInfo{Path: name, Type: UnixType(uint32(mode)), Size: size})
	}
	sort.Slice(files, func(i, j int) bool { return files[i].Path < files[j].Path })
	return files, nil
}

// Error maps the helper's exit code to package sandbox's errors; timeout
// is the host's bound on one operation, for the message of one that
// passed it.
func Error(op Op, res Result, timeout time.Duration) error {
	what := op.Name + " " + op.Path
	switch {
	case res.TimedOut:
		// Opening a regular file does not block: what did is a FIFO put
		// there after the helper looked, which the caller should hear of
		// as such rather than as a failure of the sandbox.
		return fmt.Errorf("%s: did not finish within %s: %w (a FIFO?)", what, timeout, sandbox.ErrNotRegular)
	case res.Code == 0:
		return nil
	}
	switch res.Code {
	case 2:
		return fmt.Errorf("%s: %w", what, sandbox.ErrNotFound)
	case 13:
		return fmt.Errorf("%s: %w", what, fs.ErrPermission)
	case 16:
		return fmt.Errorf("%s: the file kept changing while being opened; try again", what)
	case 18:
		return fmt.Errorf("%s: resolves to %s through a symlink: %w", what, res.Stdout, sandbox.ErrOutsideWorkspace)
	case 19:
		return fmt.Errorf("%s: %w", what, sandbox.ErrNotRegular)
	case 20:
		return fmt.Errorf("%s: %w", what, sandbox.ErrNotDir)
	case 21:
		return fmt.Errorf("%s: %w", what, sandbox.ErrIsDir)
	case 27:
		return fmt.Errorf("%s: %w: %s bytes, the limit is %d; read it in parts with a command", what, sandbox.ErrTooLarge, res.Stdout, sandbox.MaxReadSize)
	case 74:
		return fmt.Errorf("%s: the data did not arrive whole; the file may be partly written", what)
	}
	return fmt.Errorf("%s: exit code %d: %s", what, res.Code, strings.TrimSpace(res.Stderr))
}

// LimitedBuffer keeps the first Max bytes written to it and notes in Over
// whether more came.
type LimitedBuffer struct {
	Buf  bytes.Buffer
	Max  int
	Over bool
}

func (b *LimitedBuffer) Write(p []byte) (int, error) {
	n := len(p)
	if room := b.Max - b.Buf.Len(); len(p) > room {
		p, b.Over = p[:max(room, 0)], true
	}
	b.Buf.Write(p)
	return n, nil
}

// Resolve turns a workspace-relative (or absolute, inside Workdir) path
// into an absolute one, refusing any that leaves Workdir.
func Resolve(p string) (string, error) {
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

// UnixType converts the type bits of a raw st_mode.
func UnixType(mode uint32) fs.FileMode {
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
