package main

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/runner-dev/runner/internal/cli"
	"github.com/runner-dev/runner/internal/dockertest"
	"github.com/runner-dev/runner/internal/fakellm"
	"github.com/runner-dev/runner/tasks"
)

// snapshotOf returns the bytes of every file under dir, to compare a
// repository's .git before and after a run.
func snapshotOf(t *testing.T, dir string) map[string]string {
	t.Helper()
	files := map[string]string{}
	filepath.Walk(dir, func(p string, info os.FileInfo, err error) error {
		if err == nil && info.Mode().IsRegular() {
			b, _ := os.ReadFile(p)
			files[strings.TrimPrefix(p, dir)] = string(b)
		}
		return nil
	})
	return files
}

// Symlinks that point out of the workspace are committed as links, never
// followed on the host; hooks and config planted in the workspace's .git
// never reach the user's repository, and nothing runs on the host.
func TestHostileWorkspaceIsCommittedSafely(t *testing.T) {
	repo, head := sourceRepo(t, map[string]string{"a.txt": "a\n"})
	marker := filepath.Join(t.TempDir(), "pwned")
	gitBefore := snapshotOf(t, filepath.Join(repo, ".git"))
	plant := fmt.Sprintf(`ln -s /etc etc-link && ln -s ../../.. up && ln -s /root/.ssh/id_rsa key && `+
		`printf '#!/bin/sh\ntouch %[1]s\n' > .git/hooks/post-checkout && chmod +x .git/hooks/post-checkout && `+
		`cp .git/hooks/post-checkout .git/hooks/pre-commit && `+
		`git config core.fsmonitor 'touch %[1]s' && git config core.hooksPath .git/hooks && `+
		`mkdir -p sub/.GIT && echo '[core]' > sub/.GIT/config && echo ok`, marker)
	srv, _ := modelServer(t, map[string][]fakellm.Turn{
		"Plant": {fakellm.ToolCall("run_command", fmt.Sprintf(`{"command":%q}`, plant)), complete("Planted.")},
	})
	file := writeTaskFile(t, fmt.Sprintf(`
tasks: [{id: hostile, repo: %s, prompt: "Plant things.", image: %s}]
`, repo, dockertest.SandboxImage(t)))
	out := filepath.Join(t.TempDir(), "out")
	res, pid := runRunner(t, srv, "run", file, "--out", out)
	if res.code != cli.ExitOK {
		t.Fatalf("runner run: %s", res)
	}
	if tool := srv.Requests()[1].Messages; !strings.Contains(tool[len(tool)-1].Content, "ok") {
		t.Fatalf("the planting command failed: %s", tool[len(tool)-1].Content)
	}
	tree := gitCLI(t, repo, "ls-tree", "-r", "agent/hostile")
	for _, want := range []string{"120000 blob", "\tetc-link", "\tup", "\tkey"} {
		if !strings.Contains(tree, want) {
			t.Errorf("the branch's tree lacks %q:\n%s", want, tree)
		}
	}
	if strings.Contains(strings.ToLower(tree), ".git") {
		t.Errorf("a .git entry was committed:\n%s", tree)
	}
	if got := gitCLI(t, repo, "cat-file", "-p", "agent/hostile:etc-link"); got != "/etc" {
		t.Errorf("etc-link was not committed as a link to /etc: %q", got)
	}
	// The user's .git: only the new branch (and its objects) was added.
	gitAfter := snapshotOf(t, filepath.Join(repo, ".git"))
	for name, body := range gitBefore {
		if strings.HasPrefix(name, "/objects/") || name == "/logs/HEAD" {
			continue
		}
		if gitAfter[name] != body {
			t.Errorf(".git%s changed", name)
		}
	}
	for name := range gitAfter {
		if _, old := gitBefore[name]; !old && !strings.HasPrefix(name, "/objects/") && name != "/refs/heads/agent/hostile" {
			t.Errorf(".git%s was added", name)
		}
	}
	// Use the repository the way a user would; nothing planted runs.
	gitCLI(t, repo, "status")
	gitCLI(t, repo, "checkout", "-q", "agent/hostile")
	gitCLI(t, repo, "checkout", "-q", "main")
	if _, err := os.Stat(marker); err == nil {
		t.Fatalf("a planted hook or config ran on the host")
	}
	userRepoUnchanged(t, repo, head)
	noLeftovers(t, pid)
}

// A workspace whose copy-out holds what git must never import — here a
// hard link — is refused with the path named, and nothing is committed.
func TestHostileSnapshotIsRefused(t *testing.T) {
	repo, head := sourceRepo(t, map[string]string{"a.txt": "a\n"})
	srv, _ := modelServer(t, map[string][]fakellm.Turn{
		"Link": {fakellm.ToolCall("run_command", `{"command":"ln a.txt hard.txt"}`), complete("Linked.")},
	})
	file := writeTaskFile(t, fmt.Sprintf(`
tasks: [{id: hardlink, repo: %s, prompt: "Link.", image: %s}]
`, repo, dockertest.Busybox(t)))
	out := filepath.Join(t.TempDir(), "out")
	res, pid := runRunner(t, srv, "run", file, "--out", out)
	if res.code != cli.ExitFailure {
		t.Fatalf("runner run: %s", res)
	}
	r := readResultLines(t, out)[0]
	if r.Status != tasks.StatusError || !strings.Contains(r.Error, "hard.txt") || r.Commit != "" {
		t.Errorf("result = %+v; want an error naming hard.txt and no commit", r)
	}
	if got := branchList(t, repo); strings.Join(got, " ") != "main" {
		t.Errorf("branches = %v", got)
	}
	userRepoUnchanged(t, repo, head)
	noLeftovers(t, pid)
}
