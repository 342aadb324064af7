package batch

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/runner-dev/runner/internal/dockertest"
	"github.com/runner-dev/runner/internal/fakellm"
	"github.com/runner-dev/runner/tasks"
)

// A task on a repository that checks out with CRLF (`* text eol=crlf`):
// the agent sees CRLF, as a developer's `git clone` would give; its
// one-line edit is a one-line change on the branch, which stays clean once
// checked out; deleting a submodule's directory deletes the submodule; a
// repository the agent makes inside the workspace is left out, and the
// result says what git would have done differently.
func TestTaskOnCRLFRepositoryCommitsOnlyTheChange(t *testing.T) {
	repo := t.TempDir()
	git(t, repo, "init", "-q", "-b", "main")
	files := map[string]string{
		".gitattributes": "* text eol=crlf\n",
		"Program.cs":     "class A {\n  int x;\n}\n",
		"Other.cs":       "class B {}\n",
		".gitmodules":    "[submodule \"vendor/lib\"]\n\tpath = vendor/lib\n\turl = https://example.com/lib.git\n",
	}
	for p, c := range files {
		if err := os.WriteFile(filepath.Join(repo, p), []byte(c), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	git(t, repo, "add", "-A")
	git(t, repo, "update-index", "--add", "--cacheinfo", "160000,"+strings.Repeat("ab", 20)+",vendor/lib")
	git(t, repo, "commit", "-q", "-m", "first")
	head := git(t, repo, "rev-parse", "HEAD")

	store, err := tasks.OpenStore(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	defer store.Close()
	srv := fakellm.New(t,
		fakellm.ToolCall("run_command", `{"command":"od -c Program.cs | head -1"}`),
		fakellm.ToolCall("edit_file", `{"path":"Program.cs","old_string":"int x;","new_string":"int y;"}`),
		fakellm.ToolCall("run_command", `{"command":"rm -rf vendor/lib && mkdir -p scratch/.git && echo s > scratch/s.txt"}`),
		fakellm.ToolCall("complete", `{"summary":"Renamed x to y."}`),
	)
	queue := []tasks.Task{{
		ID: "crlf", Repo: repo, Prompt: "Rename x.", Image: dockertest.Busybox(t), Model: "gpt-4o-mini", BudgetUSD: 1,
	}}
	sum, err := Run(context.Background(), queue, Options{RunID: dockertest.RunID}, deps(t, store, srv))
	if err != nil {
		t.Fatal(err)
	}
	r := sum.Results[0]
	if r.Status != tasks.StatusSucceeded || r.Commit == "" {
		t.Fatalf("result = %+v", r)
	}
	if seen := srv.Requests()[1].Messages; !strings.Contains(seen[len(seen)-1].Content, `\r  \n`) {
		t.Errorf("the agent did not see CRLF line endings: %q", seen[len(seen)-1].Content)
	}
	if got := git(t, repo, "diff", "--name-status", head, "agent/crlf"); got != "M\tProgram.cs\nD\tvendor/lib" {
		t.Errorf("changes on the branch:\n%s\nwant Program.cs modified and the submodule deleted", got)
	}
	if got := git(t, repo, "diff", "--numstat", head, "agent/crlf", "--", "Program.cs"); got != "1\t1\tProgram.cs" {
		t.Errorf("Program.cs changed as %q, want one line", got)
	}
	warnings := strings.Join(r.Warnings, "\n")
	for _, want := range []string{`nested repository "scratch" left out`, `submodule "vendor/lib" removed, but .gitmodules still describes it`} {
		if !strings.Contains(warnings, want) {
			t.Errorf("warnings lack %q:\n%s", want, warnings)
		}
	}

	// Checked out and touched, nothing shows as modified.
	clone := filepath.Join(t.TempDir(), "clone")
	git(t, repo, "clone", "-q", "-b", "agent/crlf", repo, clone)
	later := time.Now().Add(time.Hour)
	for _, p := range []string{"Program.cs", "Other.cs", ".gitattributes"} {
		if err := os.Chtimes(filepath.Join(clone, p), later, later); err != nil {
			t.Fatal(err)
		}
	}
	if got := git(t, clone, "status", "--porcelain"); got != "" {
		t.Errorf("the branch, checked out, shows changes:\n%s", got)
	}
}
