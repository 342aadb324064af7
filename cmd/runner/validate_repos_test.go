package main

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/runner-dev/runner/internal/cli"
)

// validate checks each local repository as a run would use it: commits,
// refs, branches checked out in any worktree or colliding with refs.
func TestValidateRepositories(t *testing.T) {
	repo, _ := sourceRepo(t, map[string]string{"a": "a\n"})
	gitCLI(t, repo, "branch", "v1")
	gitCLI(t, repo, "tag", "v1")
	gitCLI(t, repo, "branch", "feature")
	review := filepath.Join(t.TempDir(), "review")
	gitCLI(t, repo, "worktree", "add", "-q", "-b", "review", review)
	empty := filepath.Join(t.TempDir(), "empty")
	gitCLI(t, filepath.Dir(empty), "init", "-q", empty)
	file := writeTaskFile(t, fmt.Sprintf(`
defaults: {repo: %s}
tasks:
  - {id: ok, prompt: p, ref: v1}
  - {id: main, prompt: p, branch: main}
  - {id: review, prompt: p, branch: review}
  - {id: below, prompt: p, branch: feature/below}
  - {id: noref, prompt: p, ref: nope}
  - {id: empty, prompt: p, repo: %s}
  - {id: elsewhere, prompt: p, repo: %s}
  - {id: a, prompt: p, branch: x/a}
  - {id: b, prompt: p, branch: x/a/b}
`, repo, empty, filepath.Join(t.TempDir(), "not-here")))
	res := runBinary(t, "validate", file)
	if res.code != cli.ExitUsage {
		t.Fatalf("runner validate: %s", res)
	}
	// The file's own problem first; the repositories are checked once the
	// file is valid.
	checkLines(t, "stderr", res.stderr, []string{
		file + `:12:32: task "b": branch "x/a/b" collides with branch "x/a" of task "a" (line 11)`,
		"runner: 1 problem",
	})
	content, _ := os.ReadFile(file)
	writeFile(t, file, strings.Replace(string(content), "branch: x/a/b", "branch: y/a/b", 1))
	res = runBinary(t, "validate", file)
	if res.code != cli.ExitUsage {
		t.Fatalf("runner validate: %s", res)
	}
	checkLines(t, "stderr", res.stderr, []string{
		"warning: " + file + `:4: task "ok": ref "v1" names both the branch v1 and the tag v1; the task starts from the branch, as git clone --branch does (write refs/tags/v1 for the tag)`,
		file + `:5: task "main": branch main is checked out in ` + repo + "; a checked-out branch is never written or deleted; choose another branch for this task",
		file + `:6: task "review": branch review is checked out in ` + review + "; a checked-out branch is never written or deleted; choose another branch for this task",
		file + `:7: task "below": branch feature/below cannot be created: refs/heads/feature exists, and git cannot hold both a ref and refs below it; choose another branch`,
		file + `:8: task "noref": ref: ref not found: "nope" is not a branch, tag or commit of the repository`,
		file + `:9: task "empty": repo: ` + empty + ": repository has no commits",
		"runner: 5 problems",
	})
}
