package batch

import (
	"archive/tar"
	"bytes"
	"context"
	"encoding/base64"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"maps"
	"os"
	"path"
	"path/filepath"
	"slices"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/runner-dev/runner/agent"
	"github.com/runner-dev/runner/gitops"
	"github.com/runner-dev/runner/sandbox"
)

// Limits of the copy of a workspace for an isolated sub-agent.
const (
	maxCopyBytes   = 32 << 20 // file contents, in all
	maxCopyEntries = 100_000
	copyTimeout    = 5 * time.Minute
	// maxPatchDiffLines caps the diff shown to the model.
	maxPatchDiffLines = 400
)

// copyScript writes a tar of the workspace, base64-encoded, to stdout, and
// tar's exit status last on stderr (sh has no pipefail everywhere).
const copyScript = `( tar -cf - . ; echo "tar-exit $?" >&2 ) | base64`

// isolator starts the sandboxes of the task's isolated sub-agents (see
// agent.Isolator): a fresh sandbox of the task's configuration whose
// workspace is a copy of the parent's as it is now, made without
// stopping the parent: tar runs in the parent as the sandbox user, and
// its output is read here as untrusted input (see readWorkspace). The
// copy leaves out .git, as a commit does; the sub-agent's changes come
// back as a patch of whole files.
func (w *work) isolator(cfg sandbox.Config) agent.Isolator {
	return func(ctx context.Context, parent sandbox.Sandbox) (agent.Isolated, error) {
		base, err := copyWorkspace(ctx, parent)
		if err != nil {
			return nil, err
		}
		dir, err := os.MkdirTemp(w.deps.WorkDir, "runner-"+w.task.ID+"-sub-")
		if err != nil {
			return nil, fmt.Errorf("create workspace: %w", err)
		}
		if err := base.writeFiles(dir); err != nil {
			os.RemoveAll(dir)
			return nil, err
		}
		c := cfg
		c.Workspace = dir
		sb, err := w.deps.StartSandbox(ctx, c)
		if sb != nil {
			// Closed by the caller from here, whatever happens.
			iso := &isolated{sb: sb, base: base, dir: dir}
			if err == nil {
				err = base.makeLinks(ctx, sb)
			}
			if err != nil {
				iso.Close(context.WithoutCancel(ctx))
				return nil, fmt.Errorf("start sandbox: %w", err)
			}
			return iso, nil
		}
		os.RemoveAll(dir)
		return nil, fmt.Errorf("start sandbox: %w", err)
	}
}

// isolated is an isolated sub-agent's sandbox and the copy it started with.
type isolated struct {
	sb   sandbox.Sandbox
	base *workspaceCopy
	dir  string
}

func (i *isolated) Sandbox() sandbox.Sandbox { return i.sb }

func (i *isolated) Close(ctx context.Context) error {
	err := i.sb.Close(ctx)
	os.RemoveAll(i.dir)
	return err
}

// Patch snapshots the sandbox (stopping it) and compares its workspace
// with the copy it started from.
func (i *isolated) Patch(ctx context.Context) (agent.Patch, error) {
	snap, err := i.sb.Snapshot(ctx)
	if err != nil {
		return agent.Patch{}, fmt.Errorf("snapshot: %w", err)
	}
	defer snap.Close()
	now, err := readWorkspace(snap)
	if err != nil {
		return agent.Patch{}, err
	}
	return diffCopies(i.base, now), nil
}

// copyWorkspace reads the workspace of a running sandbox.
func copyWorkspace(ctx context.Context, sb sandbox.Sandbox) (*workspaceCopy, error) {
	// base64 takes 4 bytes for 3, plus a newline for 76.
	res, err := sb.Exec(ctx, copyScript, sandbox.ExecOptions{Timeout: copyTimeout, MaxOutput: maxCopyBytes/3*4*77/76 + 4<<20})
	if err != nil {
		return nil, fmt.Errorf("copy the workspace: %w", err)
	}
	switch {
	case res.TimedOut:
		return nil, fmt.Errorf("copy the workspace: not done within %s", copyTimeout)
	case res.Truncated:
		return nil, fmt.Errorf("copy the workspace: it holds more than %d MiB", maxCopyBytes>>20)
	case res.ExitCode != 0 || !strings.HasSuffix(strings.TrimSpace(res.Stderr), "tar-exit 0"):
		return nil, fmt.Errorf("copy the workspace: tar failed: %s", firstLine(res.Stderr))
	}
	return readWorkspace(base64.NewDecoder(base64.StdEncoding, strings.NewReader(res.Stdout)))
}

// workspaceCopy is a workspace read from a tar: regular files and
// symlinks, by clean relative path; .git, directories and special files
// left out (the latter named in skipped).
type workspaceCopy struct {
	files   map[string]copiedFile
	links   map[string]string
	skipped []string
}

type copiedFile struct {
	data []byte
	mode fs.FileMode // 0644 or 0755, as git keeps it
}

// readWorkspace reads a tar of a workspace, which the sandbox's processes
// made: entry names must be relative and stay inside ("./a", "a/b"; no
// "..", no absolute path), contents and entries are capped, and nothing of
// it is ever extracted as it stands (see writeFiles).
func readWorkspace(r io.Reader) (*workspaceCopy, error) {
	c := &workspaceCopy{files: map[string]copiedFile{}, links: map[string]string{}}
	tr := tar.NewReader(r)
	var total int64
	for n := 0; ; n++ {
		hdr, err := tr.Next()
		if errors.Is(err, io.EOF) {
			return c, nil
		}
		if err != nil {
			return nil, fmt.Errorf("read the workspace: %w", err)
		}
		if n >= maxCopyEntries {
			return nil, fmt.Errorf("read the workspace: more than %d entries", maxCopyEntries)
		}
		name, err := copyPath(hdr.Name)
		if err != nil {
			return nil, fmt.Errorf("read the workspace: %w", err)
		}
		if name == "" || gitops.IsGitPath(name) {
			continue
		}
		delete(c.files, name)
		delete(c.links, name)
		switch hdr.Typeflag {
		case tar.TypeDir:
		case tar.TypeReg:
			total += hdr.Size
			if hdr.Size < 0 || total > maxCopyBytes {
				return nil, fmt.Errorf("read the workspace: it holds more than %d MiB", maxCopyBytes>>20)
			}
			data, err := io.ReadAll(io.LimitReader(tr, hdr.Size))
			if err != nil {
				return nil, fmt.Errorf("read the workspace: %s: %w", name, err)
			}
			mode := fs.FileMode(0o644)
			if hdr.Mode&0o111 != 0 {
				mode = 0o755
			}
			c.files[name] = copiedFile{data: data, mode: mode}
		case tar.TypeSymlink:
			c.links[name] = hdr.Linkname
		default:
			c.skipped = append(c.skipped, name+" (not a regular file, directory or symlink)")
		}
	}
}

// copyPath is a tar entry's name as a clean slash path relative to the
// workspace, "" for the workspace itself.
func copyPath(name string) (string, error) {
	p := path.Clean(strings.TrimPrefix(name, "./"))
	switch {
	case p == "." || p == "":
		return "", nil
	case path.IsAbs(p) || p == ".." || strings.HasPrefix(p, "../") || strings.ContainsRune(p, 0):
		return "", fmt.Errorf("entry %q leaves the workspace", name)
	}
	return p, nil
}

// writeFiles writes the regular files of the copy under dir, which is
// new and empty. No symlink is made on the host, so every path, clean
// and relative, stays in dir; the sandbox makes the symlinks (makeLinks).
func (c *workspaceCopy) writeFiles(dir string) error {
	for _, p := range slices.Sorted(maps.Keys(c.files)) {
		f := c.files[p]
		full := filepath.Join(dir, filepath.FromSlash(p))
		if err := os.MkdirAll(filepath.Dir(full), 0o755); err != nil {
			return fmt.Errorf("copy the workspace: %w", err)
		}
		out, err := os.OpenFile(full, os.O_WRONLY|os.O_CREATE|os.O_EXCL, f.mode)
		if err != nil {
			return fmt.Errorf("copy the workspace: %w", err)
		}
		_, err = out.Write(f.data)
		if cerr := out.Close(); err == nil {
			err = cerr
		}
		if err != nil {
			return fmt.Errorf("copy the workspace: %w", err)
		}
	}
	return nil
}

// makeLinks makes the copy's symlinks in sb, as its user.
func (c *workspaceCopy) makeLinks(ctx context.Context, sb sandbox.Sandbox) error {
	var script strings.Builder
	flush := func() error {
		if script.Len() == 0 {
			return nil
		}
		res, err := sb.Exec(ctx, "set -e\n"+script.String(), sandbox.ExecOptions{Timeout: copyTimeout, MaxOutput: 4 << 10})
		script.Reset()
		if err != nil {
			return fmt.Errorf("copy the workspace's symlinks: %w", err)
		}
		if res.ExitCode != 0 || res.TimedOut {
			return fmt.Errorf("copy the workspace's symlinks: exit %d: %s", res.ExitCode, firstLine(res.Output))
		}
		return nil
	}
	for _, p := range slices.Sorted(maps.Keys(c.links)) {
		full := sandbox.Workdir + "/" + p
		fmt.Fprintf(&script, "mkdir -p -- %s && ln -s -- %s %s\n", quote(path.Dir(full)), quote(c.links[p]), quote(full))
		if script.Len() > 64<<10 {
			if err := flush(); err != nil {
				return err
			}
		}
	}
	return flush()
}

// diffCopies is the patch from base to now: regular files added, changed
// (content or mode) and removed. Symlink changes are named in Skipped.
func diffCopies(base, now *workspaceCopy) agent.Patch {
	p := agent.Patch{Skipped: slices.Clone(now.skipped)}
	var diff strings.Builder
	lines := 0
	show := func(header, old, new string, binary bool) {
		if lines >= maxPatchDiffLines {
			return
		}
		diff.WriteString(header + "\n")
		lines++
		if binary {
			diff.WriteString("(binary content not shown)\n")
			lines++
			return
		}
		body, _, _, omitted, err := gitops.TextDiff(old, new, maxPatchDiffLines-lines)
		if err != nil {
			return
		}
		for _, l := range body {
			diff.WriteString(l + "\n")
		}
		lines += len(body)
		if omitted > 0 {
			fmt.Fprintf(&diff, "[... %d more lines of this diff not shown]\n", omitted)
		}
	}
	for _, name := range slices.Sorted(maps.Keys(now.files)) {
		f := now.files[name]
		old, had := base.files[name]
		if had && bytes.Equal(old.data, f.data) && old.mode == f.mode {
			continue
		}
		p.Changes = append(p.Changes, agent.FileChange{Path: name, Content: f.data, Mode: f.mode, Base: old.data, BaseExists: had})
		switch {
		case !had:
			show("added "+name, "", string(f.data), !isText(f.data))
		case bytes.Equal(old.data, f.data):
			show(fmt.Sprintf("mode of %s: %o -> %o", name, old.mode, f.mode), "", "", true)
		default:
			show("changed "+name, string(old.data), string(f.data), !isText(f.data) || !isText(old.data))
		}
	}
	for _, name := range slices.Sorted(maps.Keys(base.files)) {
		if _, ok := now.files[name]; !ok {
			old := base.files[name]
			p.Changes = append(p.Changes, agent.FileChange{Path: name, Delete: true, Base: old.data, BaseExists: true})
			if lines < maxPatchDiffLines {
				diff.WriteString("removed " + name + "\n")
				lines++
			}
		}
	}
	for _, name := range slices.Sorted(maps.Keys(now.links)) {
		if target, ok := base.links[name]; !ok || target != now.links[name] {
			p.Skipped = append(p.Skipped, name+" (a symlink)")
		}
	}
	for name := range base.links {
		if _, ok := now.links[name]; !ok {
			p.Skipped = append(p.Skipped, name+" (a symlink, removed)")
		}
	}
	slices.Sort(p.Skipped)
	if lines >= maxPatchDiffLines {
		fmt.Fprintf(&diff, "[the diff is cut at %d lines]\n", maxPatchDiffLines)
	}
	p.Diff = diff.String()
	return p
}

func isText(b []byte) bool { return bytes.IndexByte(b, 0) < 0 && utf8.Valid(b) }

// quote quotes s for sh.
func quote(s string) string { return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'" }
