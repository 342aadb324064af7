package docker_test

import (
	"archive/tar"
	"bytes"
	"context"
	"errors"
	"io"
	"io/fs"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/runner-dev/runner/internal/dockertest"
	"github.com/runner-dev/runner/sandbox"
)

// fileImages are the images the file tools are tried on: busybox's ash and
// Debian's dash with GNU coreutils.
var fileImages = []struct {
	name  string
	image func(testing.TB) string
}{{"busybox", dockertest.Busybox}, {"debian", dockertest.SandboxImage}}

// A host tree copied in keeps its modes and symlinks, is owned by the
// sandbox user, and .git travels with it.
func TestWorkspaceCopiedIn(t *testing.T) {
	dir := t.TempDir()
	write := func(name, body string, mode os.FileMode) {
		p := filepath.Join(dir, name)
		os.MkdirAll(filepath.Dir(p), 0o755)
		if err := os.WriteFile(p, []byte(body), mode); err != nil {
			t.Fatal(err)
		}
		os.Chmod(p, mode)
	}
	write("README.md", "hello\n", 0o644)
	write("bin/run.sh", "#!/bin/sh\necho ran\n", 0o755)
	write("src/deep/name with spaces.txt", "spaces\n", 0o600)
	write(".git/HEAD", "ref: refs/heads/main\n", 0o644)
	os.Symlink("../README.md", filepath.Join(dir, "src/link"))
	os.Symlink("/etc/passwd", filepath.Join(dir, "abs-link"))

	sb := start(t, sandbox.Config{Workspace: dir})
	got := output(t, sb, `find . | sort | while read -r f; do echo "$(stat -c '%u:%g %a %F %n' "$f") $(readlink "$f")"; done`)
	want := strings.Join([]string{
		"1000:1000 755 directory . ",
		"1000:1000 755 directory ./.git ",
		"1000:1000 644 regular file ./.git/HEAD ",
		"1000:1000 644 regular file ./README.md ",
		"1000:1000 777 symbolic link ./abs-link /etc/passwd",
		"1000:1000 755 directory ./bin ",
		"1000:1000 755 regular file ./bin/run.sh ",
		"1000:1000 755 directory ./src ",
		"1000:1000 755 directory ./src/deep ",
		"1000:1000 600 regular file ./src/deep/name with spaces.txt ",
		"1000:1000 777 symbolic link ./src/link ../README.md",
	}, "\n")
	if got != want {
		t.Errorf("workspace in the sandbox:\n%s\nwant:\n%s", got, want)
	}
	if got := output(t, sb, "./bin/run.sh && cat src/link"); got != "ran\nhello" {
		t.Errorf("running the copied script = %q", got)
	}
	if got := output(t, sb, `echo "$HOME"; touch "$HOME/x" && echo home writable`); got != "/home/sandbox\nhome writable" {
		t.Errorf("home = %q", got)
	}
}

func TestFileRoundTrip(t *testing.T) {
	for _, img := range fileImages {
		t.Run(img.name, func(t *testing.T) {
			sb := start(t, sandbox.Config{Image: img.image(t)})
			ctx := context.Background()
			data := make([]byte, 1<<20)
			for i := range data {
				data[i] = byte(rand.IntN(256))
			}
			copy(data, []byte{0, 1, 2, 0xff, '\r', '\n', 0})
			if err := sb.WriteFile(ctx, "new/dir/blob.bin", data, 0o755); err != nil {
				t.Fatalf("WriteFile: %v", err)
			}
			got, err := sb.ReadFile(ctx, "new/dir/blob.bin")
			if err != nil {
				t.Fatalf("ReadFile: %v", err)
			}
			if !bytes.Equal(got, data) {
				t.Fatalf("read back %d bytes, not byte-identical to the %d written", len(got), len(data))
			}
			if st := output(t, sb, "stat -c '%u:%g %a' new new/dir new/dir/blob.bin"); st != "1000:1000 755\n1000:1000 755\n1000:1000 755" {
				t.Errorf("owner and modes = %q", st)
			}
			// Overwrite keeps working, and an absolute path inside the workspace
			// is the same file.
			if err := sb.WriteFile(ctx, "/workspace/new/dir/blob.bin", []byte("short"), 0o644); err != nil {
				t.Fatal(err)
			}
			if got, _ := sb.ReadFile(ctx, "new/dir/blob.bin"); string(got) != "short" {
				t.Errorf("after overwrite: %q", got)
			}
			// Writing through a symlink that stays inside writes its target.
			output(t, sb, "echo old > target.txt && ln -s target.txt alias.txt")
			if err := sb.WriteFile(ctx, "alias.txt", []byte("new\n"), 0o644); err != nil {
				t.Fatal(err)
			}
			if got := output(t, sb, "cat target.txt; [ -L alias.txt ] && echo still a link"); got != "new\nstill a link" {
				t.Errorf("write through a symlink: %q", got)
			}
		})
	}
}

func TestFileErrors(t *testing.T) {
	for _, img := range fileImages {
		t.Run(img.name, func(t *testing.T) {
			sb := start(t, sandbox.Config{Image: img.image(t)})
			ctx := context.Background()
			output(t, sb, `mkdir adir && head -c 9000000 /dev/zero > big && ln -s /etc etc-link && ln -s /etc/passwd passwd-link && echo x > locked && chmod 0 locked`)
			tests := []struct {
				name string
				op   func() error
				want error
				msg  string
			}{
				{"read missing", func() error { _, err := sb.ReadFile(ctx, "nope.txt"); return err }, sandbox.ErrNotFound, "nope.txt"},
				{"read a directory", func() error { _, err := sb.ReadFile(ctx, "adir"); return err }, sandbox.ErrIsDir, "adir"},
				{"read too large", func() error { _, err := sb.ReadFile(ctx, "big"); return err }, sandbox.ErrTooLarge, "9000000 bytes"},
				{"read outside", func() error { _, err := sb.ReadFile(ctx, "../etc/passwd"); return err }, sandbox.ErrOutsideWorkspace, "../etc/passwd"},
				{"read through a symlink dir", func() error { _, err := sb.ReadFile(ctx, "etc-link/passwd"); return err }, sandbox.ErrOutsideWorkspace, "/etc/passwd"},
				{"read a symlink out", func() error { _, err := sb.ReadFile(ctx, "passwd-link"); return err }, sandbox.ErrOutsideWorkspace, "passwd-link"},
				{"read unreadable", func() error { _, err := sb.ReadFile(ctx, "locked"); return err }, fs.ErrPermission, "locked"},
				{"write a directory", func() error { return sb.WriteFile(ctx, "adir", []byte("x"), 0o644) }, sandbox.ErrIsDir, "adir"},
				{"write outside", func() error { return sb.WriteFile(ctx, "/etc/evil", []byte("x"), 0o644) }, sandbox.ErrOutsideWorkspace, "/etc/evil"},
				{"write through a symlink dir", func() error { return sb.WriteFile(ctx, "etc-link/evil", []byte("x"), 0o644) }, sandbox.ErrOutsideWorkspace, "etc-link/evil"},
				{"write a symlink out", func() error { return sb.WriteFile(ctx, "passwd-link", []byte("x"), 0o644) }, sandbox.ErrOutsideWorkspace, "passwd-link"},
				{"list missing", func() error { _, err := sb.ListFiles(ctx, "nowhere", false); return err }, sandbox.ErrNotFound, "nowhere"},
			}
			for _, tt := range tests {
				t.Run(tt.name, func(t *testing.T) {
					err := tt.op()
					if !errors.Is(err, tt.want) || !strings.Contains(err.Error(), tt.msg) {
						t.Errorf("got %v, want %v mentioning %q", err, tt.want, tt.msg)
					}
				})
			}
			if got := output(t, sb, "ls /etc/evil 2>&1 || true"); !strings.Contains(got, "No such file") {
				t.Errorf("a refused write reached /etc: %s", got)
			}
		})
	}
}

func TestListFiles(t *testing.T) {
	sb := start(t, sandbox.Config{})
	ctx := context.Background()
	output(t, sb, `mkdir -p src/pkg .git/objects && echo a > src/a.go && echo bb > src/pkg/b.go && echo ref > .git/HEAD && ln -s src/a.go top-link`)
	top, err := sb.ListFiles(ctx, "", false)
	if err != nil {
		t.Fatal(err)
	}
	if got, want := describe(top), ".git/ src/ top-link@"; got != want {
		t.Errorf("ListFiles(\"\", false) = %s, want %s", got, want)
	}
	all, err := sb.ListFiles(ctx, ".", true)
	if err != nil {
		t.Fatal(err)
	}
	if got, want := describe(all), ".git/ src/ src/a.go:2 src/pkg/ src/pkg/b.go:3 top-link@"; got != want {
		t.Errorf("ListFiles(\".\", true) = %s, want %s", got, want)
	}
	sub, err := sb.ListFiles(ctx, "src", true)
	if err != nil {
		t.Fatal(err)
	}
	if got, want := describe(sub), "src/a.go:2 src/pkg/ src/pkg/b.go:3"; got != want {
		t.Errorf("ListFiles(\"src\", true) = %s, want %s", got, want)
	}
}

func describe(files []sandbox.FileInfo) string {
	var parts []string
	for _, f := range files {
		switch f.Type {
		case fs.ModeDir:
			parts = append(parts, f.Path+"/")
		case fs.ModeSymlink:
			parts = append(parts, f.Path+"@")
		default:
			parts = append(parts, f.Path+":"+strconv.FormatInt(f.Size, 10))
		}
	}
	return strings.Join(parts, " ")
}

func TestSnapshot(t *testing.T) {
	dir := t.TempDir()
	os.WriteFile(filepath.Join(dir, "keep.txt"), []byte("kept\n"), 0o644)
	os.WriteFile(filepath.Join(dir, "gone.txt"), []byte("gone\n"), 0o644)
	sb := start(t, sandbox.Config{Workspace: dir})
	ctx := context.Background()
	output(t, sb, "rm gone.txt && mkdir -p new && printf 'x' > new/file && chmod 755 new/file && ln -s keep.txt link && sleep 300 >/dev/null 2>&1 &")
	rc, err := sb.Snapshot(ctx)
	if err != nil {
		t.Fatalf("Snapshot: %v", err)
	}
	defer rc.Close()
	if state, _ := dockerCLI(t, "inspect", "--format", "{{.State.Paused}}", sb.ID()); state != "true" {
		t.Errorf("container paused = %s during the snapshot, want true", state)
	}
	got := map[string]string{}
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
		got[h.Name] = string(rune(h.Typeflag)) + " " + fs.FileMode(h.Mode).Perm().String() + " " + h.Linkname + string(body)
	}
	want := map[string]string{
		"./":         "5 -rwxr-xr-x ",
		"./keep.txt": "0 -rw-r--r-- kept\n",
		"./new/":     "5 -rwxr-xr-x ",
		"./new/file": "0 -rwxr-xr-x x",
		"./link":     "2 -rwxrwxrwx keep.txt",
	}
	for name, w := range want {
		if got[name] != w {
			t.Errorf("snapshot entry %q = %q, want %q", name, got[name], w)
		}
	}
	if len(got) != len(want) {
		t.Errorf("snapshot has %d entries, want %d: %v", len(got), len(want), got)
	}
	if _, err := sb.Exec(ctx, "true", sandbox.ExecOptions{}); !errors.Is(err, sandbox.ErrStopped) {
		t.Errorf("Exec after Snapshot: %v, want ErrStopped", err)
	}
	again, err := sb.Snapshot(ctx)
	if err != nil {
		t.Fatalf("second Snapshot: %v", err)
	}
	again.Close()
}

func TestWriteFileKeepsModeWhenAskedTo(t *testing.T) {
	sb := start(t, sandbox.Config{})
	ctx := context.Background()
	output(t, sb, "printf old > run.sh && chmod 750 run.sh")
	if err := sb.WriteFile(ctx, "run.sh", []byte("new"), 0); err != nil {
		t.Fatal(err)
	}
	if err := sb.WriteFile(ctx, "fresh.txt", []byte("x"), 0); err != nil {
		t.Fatal(err)
	}
	if got := output(t, sb, "stat -c '%a %s' run.sh fresh.txt"); got != "750 3\n644 1" {
		t.Errorf("modes and sizes = %q, want the old mode kept and 644 for a new file", got)
	}
}
