package bench

import (
	"bytes"
	"fmt"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// gitEnv isolates git from the machine's configuration and fixes the
// identity and dates, so that fixtures are the same on every machine.
var gitEnv = map[string]string{
	"GIT_CONFIG_GLOBAL":   os.DevNull,
	"GIT_CONFIG_NOSYSTEM": "1",
	"GIT_TERMINAL_PROMPT": "0",
	"GIT_AUTHOR_NAME":     "Bench",
	"GIT_AUTHOR_EMAIL":    "bench@example.com",
	"GIT_COMMITTER_NAME":  "Bench",
	"GIT_COMMITTER_EMAIL": "bench@example.com",
}

// fixtureVersion names the generator; change it when the content changes,
// so that cached fixtures are rebuilt.
const fixtureVersion = "v1"

// fixtureRepo returns a git repository with a worktree holding files files
// of source-like text (200 B to 4 KB, about 2 KB on average, 50 to a
// directory) in one commit, packed as `git gc` leaves it. It is built once
// per machine under $TMPDIR/runner-bench and reused, so that benchmarks
// time the operations on it and not its making; delete that directory to
// rebuild. Callers must not change it.
func fixtureRepo(tb testing.TB, files int) string {
	tb.Helper()
	root := filepath.Join(os.TempDir(), "runner-bench")
	dir := filepath.Join(root, fmt.Sprintf("repo-%d-%s", files, fixtureVersion))
	if _, err := os.Stat(filepath.Join(dir, ".git", "HEAD")); err == nil {
		return dir
	}
	if err := os.MkdirAll(root, 0o755); err != nil {
		tb.Fatalf("fixture: %v", err)
	}
	tmp, err := os.MkdirTemp(root, "build-")
	if err != nil {
		tb.Fatalf("fixture: %v", err)
	}
	defer os.RemoveAll(tmp)
	if err := buildRepo(tmp, files); err != nil {
		tb.Fatalf("fixture of %d files: %v", files, err)
	}
	// Another process may have finished the same fixture first: keep theirs.
	if err := os.Rename(tmp, dir); err != nil {
		if _, serr := os.Stat(filepath.Join(dir, ".git", "HEAD")); serr != nil {
			tb.Fatalf("fixture: %v", err)
		}
	}
	return dir
}

// buildRepo writes the files of a fixture into dir and commits them.
func buildRepo(dir string, files int) error {
	if err := writeSourceTree(dir, files); err != nil {
		return err
	}
	for _, args := range [][]string{
		{"init", "-q", "-b", "main"},
		{"add", "-A"},
		// No automatic gc in the background: it would race the gc below.
		{"-c", "gc.auto=0", "commit", "-q", "-m", fmt.Sprintf("fixture of %d files", files)},
		{"gc", "-q"},
	} {
		if _, err := gitCmd(dir, args...); err != nil {
			return err
		}
	}
	return nil
}

// fixturePath is where the i-th file of a fixture lives: 50 files to a
// directory, ten directories to a package.
func fixturePath(i int) string {
	return fmt.Sprintf("pkg%03d/dir%d/file%05d.txt", i/500, i/50%10, i)
}

var words = strings.Fields(`func return if else for range var const type struct interface map chan
	go defer select case switch default break continue package import error nil true false string int
	byte rune len cap make new append copy delete panic recover context ctx err value result index count`)

// writeSourceTree writes files deterministic files into dir.
func writeSourceTree(dir string, files int) error {
	rng := rand.New(rand.NewPCG(uint64(files), 1))
	var b bytes.Buffer
	for i := range files {
		p := filepath.Join(dir, filepath.FromSlash(fixturePath(i)))
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			return err
		}
		size := 200 + rng.IntN(3800)
		b.Reset()
		for b.Len() < size {
			for n := 1 + rng.IntN(9); n > 0; n-- {
				b.WriteString(words[rng.IntN(len(words))])
				b.WriteByte(' ')
			}
			b.WriteByte('\n')
		}
		if err := os.WriteFile(p, b.Bytes(), 0o644); err != nil {
			return err
		}
	}
	return nil
}

// gitCmd runs git in dir and returns its trimmed standard output.
func gitCmd(dir string, args ...string) (string, error) {
	cmd := exec.Command("git", args...)
	cmd.Dir = dir
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		return "", fmt.Errorf("git %s: %w: %s", strings.Join(args, " "), err, strings.TrimSpace(stderr.String()))
	}
	return strings.TrimSpace(stdout.String()), nil
}

// mustGit is gitCmd that ends the benchmark on failure.
func mustGit(tb testing.TB, dir string, args ...string) string {
	tb.Helper()
	out, err := gitCmd(dir, args...)
	if err != nil {
		tb.Fatal(err)
	}
	return out
}
