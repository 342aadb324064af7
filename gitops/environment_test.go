package gitops

import (
	"context"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/go-git/go-git/v5/plumbing"
)

// gitIn runs git in dir with a timeout.
func gitIn(t *testing.T, dir string, args ...string) string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, "git", append([]string{"-c", "user.name=t", "-c", "user.email=t@example.com", "-C", dir}, args...)...)
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("git %v: %v: %s", args, err, out)
	}
	return strings.TrimSpace(string(out))
}

func TestContentKeyAndIgnoredAdditions(t *testing.T) {
	dir := t.TempDir()
	gitIn(t, dir, "init", "-q")
	write := func(name, body string) {
		p := filepath.Join(dir, name)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	write(".gitignore", "node_modules/\n*.log\n!keep.log\n")
	write("web/.gitignore", ".venv/\n")
	write("go.sum", "v1\n")
	write("main.go", "package main\n")
	gitIn(t, dir, "add", "-A")
	gitIn(t, dir, "commit", "-qm", "base")
	base := commitHash(gitIn(t, dir, "rev-parse", "HEAD"))

	whole, err := ContentKey(dir, base, nil)
	if want := "tree " + gitIn(t, dir, "rev-parse", "HEAD^{tree}"); err != nil || whole != want {
		t.Errorf("ContentKey(all) = %q, %v; want %q", whole, err, want)
	}
	lock, err := ContentKey(dir, base, []string{"go.sum"})
	if want := "go.sum 100644 " + gitIn(t, dir, "rev-parse", "HEAD:go.sum") + "\n"; err != nil || lock != want {
		t.Errorf("ContentKey(go.sum) = %q, %v; want %q", lock, err, want)
	}
	if _, err := ContentKey(dir, base, []string{"package-lock.json"}); !errors.Is(err, ErrCacheKeyFile) {
		t.Errorf("ContentKey(missing) err = %v, want ErrCacheKeyFile", err)
	}
	// A changed lockfile changes the key; a changed other file does not.
	write("main.go", "package main // changed\n")
	gitIn(t, dir, "commit", "-qam", "code")
	if k, _ := ContentKey(dir, commitHash(gitIn(t, dir, "rev-parse", "HEAD")), []string{"go.sum"}); k != lock {
		t.Errorf("a change to main.go changed the go.sum key")
	}
	write("go.sum", "v2\n")
	gitIn(t, dir, "commit", "-qam", "deps")
	if k, _ := ContentKey(dir, commitHash(gitIn(t, dir, "rev-parse", "HEAD")), []string{"go.sum"}); k == lock {
		t.Errorf("a change to go.sum kept the key")
	}

	keep, err := IgnoredAdditions(dir, []string{"__pycache__/"})
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		path string
		dir  bool
		want bool
	}{
		{"node_modules", true, true},
		{"web/.venv", true, true},
		{".venv", true, false}, // web/.gitignore only applies below web/
		{"build.log", false, true},
		{"keep.log", false, false},
		{"main.go", false, false}, // tracked
		{"go.sum", false, false},
		{"new.go", false, false}, // not ignored: the agent's commit would take it
		{"pkg/__pycache__", true, true},
		{"../etc", true, false},
		{".gitignore", false, false},
	} {
		if got := keep(c.path, c.dir); got != c.want {
			t.Errorf("keep(%q, dir=%v) = %v, want %v", c.path, c.dir, got, c.want)
		}
	}
}

func commitHash(s string) plumbing.Hash { return plumbing.NewHash(s) }
