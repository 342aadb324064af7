package tasks

import "testing"

// Branches git cannot hold together are found in the file, before any
// repository is touched.
func TestBranchCollisions(t *testing.T) {
	_, got := parseProblems(t, "q.yaml", `
defaults: {repo: /r}
tasks:
  - {id: a, prompt: p}
  - {id: b, prompt: p, branch: agent/a/b}
  - {id: c, prompt: p, branch: agent/a/b/c}
  - {id: d, prompt: p, branch: x/y}
  - {id: e, prompt: p, branch: x}
  - {id: f, prompt: p, branch: refs/heads/f}
  - {id: g, prompt: p, branch: refs/tags/g}
  - {id: h, prompt: p, branch: agent/a}
`)
	assertLines(t, got, []string{
		`q.yaml:5:32: task "b": branch "agent/a/b" collides with branch "agent/a" of task "a" (line 4): git cannot hold both a branch "agent/a" and a branch below it such as "agent/a/b"`,
		`q.yaml:6:32: task "c": branch "agent/a/b/c" collides with branch "agent/a" of task "a" (line 4): git cannot hold both a branch "agent/a" and a branch below it such as "agent/a/b/c"`,
		`q.yaml:8:32: task "e": branch "x" collides with branch "x/y" of task "d" (line 7): git cannot hold both a branch "x" and a branch below it such as "x/y"`,
		`q.yaml:9:32: task "f": branch name "refs/heads/f" names the branch by its full ref; write it as "f"`,
		`q.yaml:10:32: task "g": branch name "refs/tags/g" must not start with "refs/": it would become the branch refs/heads/refs/tags/g`,
		`q.yaml:11:32: task "h": branch "agent/a" is also the branch of task "a" (line 4)`,
	})
}
