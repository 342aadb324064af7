package gitops

import (
	"bytes"
	"context"
	"errors"
	"slices"
	"strings"
	"testing"
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
