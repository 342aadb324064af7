package inmem_test

import (
	"archive/tar"
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/runner-dev/runner/internal/dockertest"
	"github.com/runner-dev/runner/sandbox"
	"github.com/runner-dev/runner/sandbox/inmem"
	"github.com/runner-dev/runner/sandbox/sandboxtest"
)

func TestMain(m *testing.M) { os.Exit(dockertest.Main(m)) }

// workspace is a starting state, built the same way in both sandboxes.
type workspace struct {
	files    [][2]string // path, content
	symlinks [][2]string // target, name
	chmods   [][2]string // octal mode, path
}

var conformanceState = workspace{
	files: [][2]string{
		{"README.md", "hello\n"}, {"src/a.go", "package a\n"}, {"src/pkg/b.go", "package pkg\n"},
		{".git/HEAD", "ref: refs/heads/main\n"}, {"locked", "secret\n"}, {"ro-dir/keep", "k\n"}, {"rofile", "r\n"},
		{"run.sh", "#!/bin/sh\n"},
	},
	symlinks: [][2]string{
		{"src/a.go", "link-in"}, {"src", "link-dir"}, {"/workspace/README.md", "link-abs-in"},
		{"/etc/passwd", "link-out"}, {"/etc", "link-dir-out"}, {"../etc/passwd", "link-up"},
		{"missing.txt", "dangling-in"}, {"nodir/x", "dangling-deep"}, {"loop2", "loop1"}, {"loop1", "loop2"},
		{"../a.go", "src/pkg/up"},
	},
	chmods: [][2]string{{"000", "locked"}, {"555", "ro-dir"}, {"444", "rofile"}, {"755", "run.sh"}},
}

// script is the shell commands that build w in a real sandbox.
func (w workspace) script() string {
	var b strings.Builder
	for _, f := range w.files {
		fmt.Fprintf(&b, "mkdir -p \"$(dirname '%s')\" && printf '%%s' '%s' > '%s' && ", f[0], f[1], f[0])
	}
	for _, l := range w.symlinks {
		fmt.Fprintf(&b, "ln -s '%s' '%s' && ", l[0], l[1])
	}
	for _, c := range w.chmods {
		fmt.Fprintf(&b, "chmod %s '%s' && ", c[0], c[1])
	}
	b.WriteString("true")
	return b.String()
}

// build makes w in an in-memory sandbox.
func (w workspace) build(t *testing.T, s *inmem.Sandbox) {
	t.Helper()
	ctx := context.Background()
	for _, f := range w.files {
		if err := s.WriteFile(ctx, f[0], []byte(f[1]), 0); err != nil {
			t.Fatal(err)
		}
	}
	for _, l := range w.symlinks {
		if err := s.Symlink(l[0], l[1]); err != nil {
			t.Fatal(err)
		}
	}
	for _, c := range w.chmods {
		var m fs.FileMode
		fmt.Sscanf(c[0], "%o", &m)
		if err := s.Chmod(c[1], m); err != nil {
			t.Fatal(err)
		}
	}
}

// errClass names the package error err is, for comparison.
func errClass(err error) string {
	for _, e := range []struct {
		err  error
		name string
	}{
		{sandbox.ErrNotFound, "not found"}, {sandbox.ErrIsDir, "is a directory"}, {sandbox.ErrNotDir, "not a directory"},
		{sandbox.ErrNotRegular, "not regular"}, {sandbox.ErrTooLarge, "too large"},
		{sandbox.ErrOutsideWorkspace, "outside"}, {fs.ErrPermission, "permission"},
		{sandbox.ErrStopped, "stopped"}, {sandbox.ErrClosed, "closed"},
	} {
		if errors.Is(err, e.err) {
			return "error: " + e.name
		}
	}
	return "error: " + err.Error()
}

// step is one call, described by its outcome.
type step struct {
	name string
	do   func(ctx context.Context, sb sandbox.Sandbox) string
}

func read(p string) step {
	return step{"read " + p, func(ctx context.Context, sb sandbox.Sandbox) string {
		b, err := sb.ReadFile(ctx, p)
		if err != nil {
			return errClass(err)
		}
		return fmt.Sprintf("%q", b)
	}}
}

func write(p, body string, mode fs.FileMode) step {
	return step{fmt.Sprintf("write %s %o", p, mode), func(ctx context.Context, sb sandbox.Sandbox) string {
		if err := sb.WriteFile(ctx, p, []byte(body), mode); err != nil {
			return errClass(err)
		}
		return "ok"
	}}
}

func list(p string, recursive bool) step {
	return step{fmt.Sprintf("list %s %v", p, recursive), func(ctx context.Context, sb sandbox.Sandbox) string {
		files, err := sb.ListFiles(ctx, p, recursive)
		if err != nil {
			return errClass(err)
		}
		var parts []string
		for _, f := range files {
			switch f.Type {
			case fs.ModeDir:
				parts = append(parts, f.Path+"/") // sizes of directories differ
			default:
				parts = append(parts, fmt.Sprintf("%s %v %d", f.Path, f.Type, f.Size))
			}
		}
		return strings.Join(parts, ", ")
	}}
}

func run(cmd string) step {
	return step{"exec " + cmd, func(ctx context.Context, sb sandbox.Sandbox) string {
		res, err := sb.Exec(ctx, cmd, sandbox.ExecOptions{})
		if err != nil {
			return errClass(err)
		}
		return fmt.Sprintf("exit %d, stdout %q", res.ExitCode, res.Stdout)
	}}
}

var conformanceSteps = []step{
	read("README.md"), read("/workspace/src/a.go"), read("link-in"), read("link-dir/pkg/b.go"), read("link-abs-in"),
	read("src/pkg/up"), read("link-out"), read("link-dir-out/passwd"), read("link-up"), read("dangling-in"),
	read("dangling-deep"), read("loop1"), read("src"), read(""), read("missing"), read("README.md/x"),
	read("../etc/passwd"), read("/etc/passwd"), read("locked"),
	list("", false), list(".", true), list("src", true), list("link-dir", false), list("missing", false),
	list("README.md", false), list("link-dir-out", false), list(".git", false),
	write("new/dir/f.txt", "new\n", 0o600), write("link-in", "via link\n", 0), write("link-dir/c.go", "c\n", 0),
	write("link-out", "x", 0), write("link-dir-out/evil", "x", 0), write("link-up", "x", 0),
	write("dangling-in", "made\n", 0), write("dangling-deep", "x", 0), write("src", "x", 0),
	write("README.md/x", "x", 0), write("ro-dir/new", "x", 0), write("ro-dir/sub/new", "x", 0),
	write("rofile", "x", 0), write("locked", "x", 0), write("", "x", 0), write("/etc/x", "x", 0),
	write("loop1", "x", 0), write("run.sh", "#!/bin/sh\necho hi\n", 0), write("README.md", "bye\n", 0o755),
	write("empty", "", 0),
	read("src/a.go"), read("missing.txt"), read("run.sh"), list(".", true),
	run("true"), run("false"), run("exit 3"), run("echo hello 'a  b' \"c\""), run("cat README.md src/a.go"),
	run("cat nothing"), run("grep -q bye README.md"), run("grep -q absent README.md"), run("test -d src"),
	run("[ -f src ]"), run("test -e link-in"), run("make"),
}

// The in-memory sandbox answers every call as the Docker backend does, on
// the same starting state: contents, errors, listings, commands of its
// built-in set, and finally the snapshot.
func TestConformsToDocker(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	e := dockertest.Engine(t)
	real, err := e.Start(ctx, sandbox.Config{Image: dockertest.Busybox(t), RunID: dockertest.RunID, TaskID: "inmem-conformance"})
	if err != nil {
		t.Fatal(err)
	}
	defer real.Close(ctx)
	if res, err := real.Exec(ctx, conformanceState.script(), sandbox.ExecOptions{}); err != nil || res.ExitCode != 0 {
		t.Fatalf("build the state in the real sandbox: %v %+v", err, res)
	}
	mem, err := inmem.New(inmem.Options{})
	if err != nil {
		t.Fatal(err)
	}
	conformanceState.build(t, mem)
	for _, st := range conformanceSteps {
		want, got := st.do(ctx, real), st.do(ctx, mem)
		if got != want {
			t.Errorf("%s:\n  in memory: %s\n  Docker:    %s", st.name, got, want)
		}
	}
	want, got := snapshotOf(t, real), snapshotOf(t, mem)
	if got != want {
		t.Errorf("snapshot:\n  in memory: %s\n  Docker:    %s", got, want)
	}
	for _, st := range []step{read("README.md"), write("x", "x", 0), list("", false), run("true")} {
		if got, want := st.do(ctx, mem), st.do(ctx, real); got != want {
			t.Errorf("after the snapshot, %s: in memory %s, Docker %s", st.name, got, want)
		}
	}
}

// snapshotOf describes the entries of a snapshot: name, type, permission
// bits, owner, link target and content.
func snapshotOf(t *testing.T, sb sandbox.Sandbox) string {
	t.Helper()
	rc, err := sb.Snapshot(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	defer rc.Close()
	var entries []string
	tr := tar.NewReader(rc)
	for {
		h, err := tr.Next()
		if err == io.EOF {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		body, _ := io.ReadAll(tr)
		entries = append(entries, fmt.Sprintf("%s %c %o %d:%d %q %q", h.Name, h.Typeflag, h.Mode&0o7777, h.Uid, h.Gid, h.Linkname, body))
	}
	slices.Sort(entries)
	return "\n    " + strings.Join(entries, "\n    ")
}

// The in-memory backend passes the parts of the conformance suite it
// emulates: the file tools, the snapshot and the lifecycle.
func TestConformance(t *testing.T) {
	sandboxtest.Run(t, sandboxtest.Target{
		Backend: &inmem.Backend{}, Image: "none", RunID: dockertest.RunID,
		Symlink: func(_ context.Context, sb sandbox.Sandbox, target, name string) error {
			return sb.(*inmem.Sandbox).Symlink(target, name)
		},
	})
}
