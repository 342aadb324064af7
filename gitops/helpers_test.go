package gitops

import (
	"archive/tar"
	"bytes"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/go-git/go-git/v5/plumbing"
)

// TestMain isolates every git process (ours and those go-git starts for
// local transports) from the machine's configuration.
func TestMain(m *testing.M) {
	for k, v := range map[string]string{
		"GIT_CONFIG_GLOBAL":   os.DevNull,
		"GIT_CONFIG_NOSYSTEM": "1",
		"GIT_TERMINAL_PROMPT": "0",
		"GIT_AUTHOR_NAME":     "Test Author",
		"GIT_AUTHOR_EMAIL":    "author@example.com",
		"GIT_COMMITTER_NAME":  "Test Author",
		"GIT_COMMITTER_EMAIL": "author@example.com",
	} {
		os.Setenv(k, v)
	}
	os.Exit(m.Run())
}

// execGit prepares git in dir with a fixed identity and default branch.
func execGit(dir string, args ...string) *exec.Cmd {
	cmd := exec.Command("git", append([]string{"-c", "init.defaultBranch=main", "-c", "user.name=Test Author", "-c", "user.email=author@example.com"}, args...)...)
	cmd.Dir = dir
	return cmd
}

// gitTry runs git in dir and returns its trimmed stdout.
func gitTry(dir string, args ...string) (string, error) {
	cmd := execGit(dir, args...)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		return stdout.String(), &gitError{args: args, err: err, stderr: stderr.String()}
	}
	return strings.TrimRight(stdout.String(), "\n"), nil
}

type gitError struct {
	args   []string
	err    error
	stderr string
}

func (e *gitError) Error() string {
	return "git " + strings.Join(e.args, " ") + ": " + e.err.Error() + ": " + e.stderr
}

// gitRun runs git in dir and fails the test on error.
func gitRun(t *testing.T, dir string, args ...string) string {
	t.Helper()
	out, err := gitTry(dir, args...)
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// file describes one path of a fixture: content with a mode, or a symlink.
type file struct {
	content string
	mode    os.FileMode // 0 means 0o644
	link    string      // symlink target when not empty
}

func writeFiles(t *testing.T, dir string, files map[string]file) {
	t.Helper()
	for p, f := range files {
		full := filepath.Join(dir, filepath.FromSlash(p))
		if err := os.MkdirAll(filepath.Dir(full), 0o755); err != nil {
			t.Fatal(err)
		}
		_ = os.RemoveAll(full)
		if f.link != "" {
			if err := os.Symlink(f.link, full); err != nil {
				t.Fatal(err)
			}
			continue
		}
		mode := f.mode
		if mode == 0 {
			mode = 0o644
		}
		if err := os.WriteFile(full, []byte(f.content), mode); err != nil {
			t.Fatal(err)
		}
		if err := os.Chmod(full, mode); err != nil {
			t.Fatal(err)
		}
	}
}

// newRepo creates a repository with one commit holding files (ignored ones
// included) and returns its path and the commit.
func newRepo(t *testing.T, files map[string]file) (string, plumbing.Hash) {
	t.Helper()
	dir := filepath.Join(t.TempDir(), "repo")
	gitRun(t, t.TempDir(), "init", "-q", dir)
	writeFiles(t, dir, files)
	gitRun(t, dir, "add", "-A", "-f")
	gitRun(t, dir, "commit", "-q", "--allow-empty", "-m", "base")
	return dir, plumbing.NewHash(gitRun(t, dir, "rev-parse", "HEAD"))
}

// tarDir returns a tar stream of dir with names like "./src/a.go", the
// way the sandbox snapshots a workspace; nothing is skipped, not even .git.
func tarDir(t *testing.T, dir string) []byte {
	t.Helper()
	var buf bytes.Buffer
	tw := tar.NewWriter(&buf)
	err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		info, err := d.Info()
		if err != nil {
			return err
		}
		link := ""
		if d.Type()&fs.ModeSymlink != 0 {
			if link, err = os.Readlink(p); err != nil {
				return err
			}
		}
		hdr, err := tar.FileInfoHeader(info, link)
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(dir, p)
		hdr.Name = "./" + filepath.ToSlash(rel)
		if rel == "." {
			hdr.Name = "./"
		} else if d.IsDir() {
			hdr.Name += "/"
		}
		if err := tw.WriteHeader(hdr); err != nil {
			return err
		}
		if d.Type().IsRegular() {
			b, err := os.ReadFile(p)
			if err != nil {
				return err
			}
			_, err = tw.Write(b)
			return err
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if err := tw.Close(); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

// entry is a hand-written tar entry.
type entry struct {
	name     string
	typeflag byte // tar.TypeReg when zero
	mode     int64
	body     string
	link     string
}

func tarOf(t *testing.T, entries ...entry) []byte {
	t.Helper()
	var buf bytes.Buffer
	tw := tar.NewWriter(&buf)
	for _, e := range entries {
		hdr := &tar.Header{Name: e.name, Typeflag: e.typeflag, Mode: e.mode, Linkname: e.link, Format: tar.FormatPAX}
		if hdr.Typeflag == 0 {
			hdr.Typeflag = tar.TypeReg
		}
		if hdr.Mode == 0 {
			hdr.Mode = 0o644
		}
		if hdr.Typeflag == tar.TypeReg {
			hdr.Size = int64(len(e.body))
		}
		if err := tw.WriteHeader(hdr); err != nil {
			t.Fatalf("tar header %q: %v", e.name, err)
		}
		if hdr.Typeflag == tar.TypeReg {
			if _, err := tw.Write([]byte(e.body)); err != nil {
				t.Fatal(err)
			}
		}
	}
	if err := tw.Close(); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

// repoState is everything of the user's repository CommitTree, Push and
// Rollback must leave alone.
type repoState struct {
	status, head, symref string
	index, config        []byte
}

func stateOf(t *testing.T, dir string) repoState {
	t.Helper()
	read := func(name string) []byte {
		b, err := os.ReadFile(filepath.Join(dir, ".git", name))
		if err != nil && !os.IsNotExist(err) {
			t.Fatal(err)
		}
		return b
	}
	return repoState{
		status: gitRun(t, dir, "status", "--porcelain=v1", "--untracked-files=all"),
		head:   gitRun(t, dir, "rev-parse", "HEAD"),
		symref: gitRun(t, dir, "symbolic-ref", "HEAD"),
		index:  read("index"),
		config: read("config"),
	}
}

func assertStateUnchanged(t *testing.T, dir string, before repoState) {
	t.Helper()
	after := stateOf(t, dir)
	if after.status != before.status {
		t.Errorf("git status changed:\n got %q\nwant %q", after.status, before.status)
	}
	if after.head != before.head || after.symref != before.symref {
		t.Errorf("HEAD changed: got %s (%s), want %s (%s)", after.head, after.symref, before.head, before.symref)
	}
	if !bytes.Equal(after.index, before.index) {
		t.Errorf("index file changed")
	}
	if !bytes.Equal(after.config, before.config) {
		t.Errorf(".git/config changed:\n got %s\nwant %s", after.config, before.config)
	}
}

// objectFiles lists the files of the object store, to prove nothing was
// written.
func objectFiles(t *testing.T, repo string) []string {
	t.Helper()
	var out []string
	root := filepath.Join(repo, ".git", "objects")
	err := filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err == nil && !d.IsDir() {
			out = append(out, strings.TrimPrefix(p, root))
		}
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	slices.Sort(out)
	return out
}

func fsckStrict(t *testing.T, repo string) {
	t.Helper()
	if out, err := gitTry(repo, "fsck", "--strict", "--no-dangling"); err != nil {
		t.Errorf("git fsck --strict: %v\n%s", err, out)
	}
}

func branchExists(repo, branch string) bool {
	_, err := gitTry(repo, "show-ref", "--verify", "--quiet", "refs/heads/"+branch)
	return err == nil
}

func mustHash(s string) plumbing.Hash {
	if !plumbing.IsHash(s) {
		panic("bad hash " + s)
	}
	return plumbing.NewHash(s)
}
