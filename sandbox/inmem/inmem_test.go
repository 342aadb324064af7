package inmem_test

import (
	"context"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/go-git/go-git/v5/plumbing"

	"github.com/runner-dev/runner/gitops"
	"github.com/runner-dev/runner/sandbox"
	"github.com/runner-dev/runner/sandbox/inmem"
)

// git runs the git CLI in dir, the independent reader of what was written.
func git(t *testing.T, dir string, args ...string) string {
	t.Helper()
	cmd := exec.Command("git", args...)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "GIT_CONFIG_GLOBAL=/dev/null", "GIT_CONFIG_NOSYSTEM=1",
		"GIT_AUTHOR_NAME=t", "GIT_AUTHOR_EMAIL=t@t", "GIT_COMMITTER_NAME=t", "GIT_COMMITTER_EMAIL=t@t")
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("git %s: %v\n%s", strings.Join(args, " "), err, out)
	}
	return strings.TrimSpace(string(out))
}

// A workspace copied in from a clone, changed in memory, comes out as a
// snapshot that gitops.CommitTree turns into the commit `git add -A` would
// make: git reads the same tree from both.
func TestSnapshotCommitsLikeGitAddAll(t *testing.T) {
	repo := t.TempDir()
	git(t, repo, "init", "-q", "-b", "main")
	os.MkdirAll(filepath.Join(repo, "src"), 0o755)
	os.WriteFile(filepath.Join(repo, "README.md"), []byte("# Helo\n"), 0o644)
	os.WriteFile(filepath.Join(repo, "src/gone.go"), []byte("package src\n"), 0o644)
	os.WriteFile(filepath.Join(repo, "run.sh"), []byte("#!/bin/sh\n"), 0o755)
	os.Symlink("README.md", filepath.Join(repo, "link"))
	git(t, repo, "add", "-A")
	git(t, repo, "commit", "-q", "-m", "base")
	base := git(t, repo, "rev-parse", "HEAD")

	var b inmem.Backend
	ctx := context.Background()
	started, err := b.Start(ctx, sandbox.Config{Workspace: repo, TaskID: "t"})
	if err != nil {
		t.Fatal(err)
	}
	sb := started.(*inmem.Sandbox)
	if got := sb.File(".git/HEAD"); got != "ref: refs/heads/main\n" {
		t.Errorf(".git/HEAD in the sandbox = %q: .git travels with the workspace", got)
	}
	sb.WriteFile(ctx, "README.md", []byte("# Hello\n"), 0)
	sb.WriteFile(ctx, "src/new/deep.go", []byte("package new\n"), 0o755)
	sb.Remove("src/gone.go")
	sb.Symlink("src/new/deep.go", "deep-link")
	sb.Mkdir("empty/dir")

	snap, err := sb.Snapshot(ctx)
	if err != nil {
		t.Fatal(err)
	}
	res, err := gitops.CommitTree(ctx, repo, plumbing.NewHash(base), snap, gitops.CommitOptions{Branch: "agent/t", Message: "change"})
	snap.Close()
	if err != nil {
		t.Fatalf("CommitTree: %v", err)
	}

	// The same changes made on disk and committed by git.
	os.WriteFile(filepath.Join(repo, "README.md"), []byte("# Hello\n"), 0o644)
	os.MkdirAll(filepath.Join(repo, "src/new"), 0o755)
	os.WriteFile(filepath.Join(repo, "src/new/deep.go"), []byte("package new\n"), 0o755)
	os.Remove(filepath.Join(repo, "src/gone.go"))
	os.Symlink("src/new/deep.go", filepath.Join(repo, "deep-link"))
	git(t, repo, "add", "-A")
	if want := git(t, repo, "write-tree"); res.Tree.String() != want {
		t.Errorf("tree from the snapshot %s, git add -A %s:\n%s", res.Tree, want, git(t, repo, "diff", "--stat", want, res.Tree.String()))
	}
	git(t, repo, "fsck", "--strict")
}

func TestCloseAndStopStates(t *testing.T) {
	ctx := context.Background()
	sb, err := inmem.New(inmem.Options{Files: map[string]string{"a.txt": "a"}})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := sb.Snapshot(ctx); err != nil {
		t.Fatal(err)
	}
	if _, err := sb.Exec(ctx, "true", sandbox.ExecOptions{}); !errors.Is(err, sandbox.ErrStopped) {
		t.Errorf("Exec after Snapshot: %v, want ErrStopped", err)
	}
	if err := sb.WriteFile(ctx, "b", nil, 0); !errors.Is(err, sandbox.ErrStopped) {
		t.Errorf("WriteFile after Snapshot: %v, want ErrStopped", err)
	}
	if rc, err := sb.Snapshot(ctx); err != nil {
		t.Errorf("second Snapshot: %v", err)
	} else {
		rc.Close()
	}
	cancelled, cancel := context.WithCancel(ctx)
	cancel()
	for i := range 2 {
		if err := sb.Close(cancelled); err != nil {
			t.Errorf("Close %d: %v", i+1, err)
		}
	}
	if _, err := sb.ReadFile(ctx, "a.txt"); !errors.Is(err, sandbox.ErrClosed) {
		t.Errorf("ReadFile after Close: %v, want ErrClosed", err)
	}
	if _, err := sb.Snapshot(ctx); !errors.Is(err, sandbox.ErrClosed) {
		t.Errorf("Snapshot after Close: %v, want ErrClosed", err)
	}
	if !sb.Closed() || !sb.Stopped() {
		t.Errorf("Closed() = %v, Stopped() = %v", sb.Closed(), sb.Stopped())
	}
}

// A caller's function answers commands; it can change the workspace, its
// output is capped like the Docker backend's, and every command is
// recorded.
func TestExecFunc(t *testing.T) {
	ctx := context.Background()
	sb, _ := inmem.New(inmem.Options{Exec: func(ctx context.Context, sb *inmem.Sandbox, cmd string, opt sandbox.ExecOptions) (sandbox.ExecResult, error) {
		if cmd == "generate" {
			return sandbox.ExecResult{}, sb.WriteFile(ctx, "gen/out.txt", []byte("generated\n"), 0)
		}
		return sandbox.ExecResult{Stdout: strings.Repeat("x", 1000) + "END"}, nil
	}})
	if _, err := sb.Exec(ctx, "generate", sandbox.ExecOptions{}); err != nil {
		t.Fatal(err)
	}
	if got := sb.File("gen/out.txt"); got != "generated\n" {
		t.Errorf("file made by the command = %q", got)
	}
	res, err := sb.Exec(ctx, "flood", sandbox.ExecOptions{MaxOutput: 100})
	if err != nil {
		t.Fatal(err)
	}
	if !res.Truncated || res.Dropped != 903 || !strings.HasSuffix(res.Output, "END") || !strings.Contains(res.Output, "903 bytes of output dropped") {
		t.Errorf("capped output: truncated %v, dropped %d, output %q", res.Truncated, res.Dropped, res.Output)
	}
	if _, err := sb.Exec(ctx, "true", sandbox.ExecOptions{Dir: "../x"}); !errors.Is(err, sandbox.ErrOutsideWorkspace) {
		t.Errorf("Exec in ../x: %v, want ErrOutsideWorkspace", err)
	}
	if got := strings.Join(sb.Commands(), ","); got != "generate,flood,true" {
		t.Errorf("commands = %s", got)
	}
	cancelled, cancel := context.WithCancel(ctx)
	cancel()
	if _, err := sb.Exec(cancelled, "true", sandbox.ExecOptions{}); !errors.Is(err, context.Canceled) {
		t.Errorf("Exec with a cancelled context: %v", err)
	}
}

// The built-in commands refuse what would need a real shell, rather than
// pretend.
func TestBuiltinRefusesShellSyntax(t *testing.T) {
	sb, _ := inmem.New(inmem.Options{Files: map[string]string{"a": "x"}})
	for _, cmd := range []string{"cat a | wc -l", "echo $HOME", "true && false", "grep -c x a", "echo 'open"} {
		res, err := sb.Exec(context.Background(), cmd, sandbox.ExecOptions{})
		if err != nil || res.ExitCode == 0 || res.Stderr == "" {
			t.Errorf("%q: %+v, %v; want a non-zero exit explaining why", cmd, res, err)
		}
	}
}

func TestConcurrentUse(t *testing.T) {
	ctx := context.Background()
	sb, _ := inmem.New(inmem.Options{})
	var wg sync.WaitGroup
	for i := range 8 {
		wg.Go(func() {
			p := filepath.Join("dir", string(rune('a'+i)))
			for range 50 {
				sb.WriteFile(ctx, p, []byte("x"), 0)
				sb.ReadFile(ctx, p)
				sb.ListFiles(ctx, "", true)
				sb.Exec(ctx, "cat "+p, sandbox.ExecOptions{})
			}
		})
	}
	wg.Wait()
	files, err := sb.ListFiles(ctx, "dir", false)
	if err != nil || len(files) != 8 {
		t.Errorf("ListFiles = %d entries, %v; want 8", len(files), err)
	}
}

func TestBackendFailsAndRecords(t *testing.T) {
	b := inmem.Backend{Fail: sandbox.ErrImageNotFound}
	if _, err := b.Start(context.Background(), sandbox.Config{Image: "x"}); !errors.Is(err, sandbox.ErrImageNotFound) {
		t.Errorf("Start = %v", err)
	}
	b.Fail = nil
	if _, err := b.Start(context.Background(), sandbox.Config{Image: "img", TaskID: "t1"}); err != nil {
		t.Fatal(err)
	}
	if cfgs := b.Configs(); len(cfgs) != 1 || cfgs[0].TaskID != "t1" || len(b.Started()) != 1 {
		t.Errorf("configs %+v, started %d", cfgs, len(b.Started()))
	}
}

// Restore puts the workspace back as Checkpoint saved it, once.
func TestCheckpointRestore(t *testing.T) {
	ctx := context.Background()
	sb, _ := inmem.New(inmem.Options{Files: map[string]string{"a.py": "a\n", "gone.py": "g\n"}})
	if err := sb.Restore(ctx); !errors.Is(err, sandbox.ErrNoCheckpoint) {
		t.Errorf("Restore before Checkpoint: %v, want ErrNoCheckpoint", err)
	}
	if err := sb.Checkpoint(ctx); err != nil {
		t.Fatal(err)
	}
	sb.WriteFile(ctx, "a.py", []byte("changed\n"), 0)
	sb.WriteFile(ctx, "__pycache__/a.pyc", []byte("pyc"), 0)
	sb.Remove("gone.py")
	if err := sb.Restore(ctx); err != nil {
		t.Fatal(err)
	}
	if a, g, pyc := sb.File("a.py"), sb.File("gone.py"), sb.File("__pycache__/a.pyc"); a != "a\n" || g != "g\n" || pyc != "" {
		t.Errorf("after Restore: a.py %q, gone.py %q, __pycache__/a.pyc %q", a, g, pyc)
	}
	if err := sb.Restore(ctx); !errors.Is(err, sandbox.ErrNoCheckpoint) {
		t.Errorf("second Restore: %v, want ErrNoCheckpoint", err)
	}
}
