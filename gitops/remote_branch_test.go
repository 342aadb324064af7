package gitops

import (
	"context"
	"path/filepath"
	"testing"
)

// RemoteBranchHead reads a branch of a remote as git ls-remote does: its
// commit, or not found for a branch (or a whole repository) without one.
func TestRemoteBranchHead(t *testing.T) {
	src, base := newRepo(t, map[string]file{"a.txt": {content: "a\n"}})
	bare := filepath.Join(t.TempDir(), "remote.git")
	gitRun(t, t.TempDir(), "clone", "-q", "--bare", src, bare)
	gitRun(t, bare, "branch", "agent/x", base.String())
	empty := filepath.Join(t.TempDir(), "empty.git")
	gitRun(t, t.TempDir(), "init", "-q", "--bare", empty)

	tests := []struct {
		url, branch string
		found       bool
	}{
		{"file://" + bare, "agent/x", true},
		{"file://" + bare, "agent/y", false},
		{"file://" + bare, "x", false}, // a branch is matched whole, not by suffix
		{"file://" + empty, "agent/x", false},
	}
	for _, tt := range tests {
		got, found, err := RemoteBranchHead(context.Background(), RemoteSpec{URL: tt.url}, tt.branch)
		if err != nil {
			t.Fatalf("RemoteBranchHead(%s, %s): %v", tt.url, tt.branch, err)
		}
		if found != tt.found || found && got != base {
			t.Errorf("RemoteBranchHead(%s, %s) = %s, %v; want %s, %v", tt.url, tt.branch, got, found, base, tt.found)
		}
	}
	if _, _, err := RemoteBranchHead(context.Background(), RemoteSpec{URL: "file://" + filepath.Join(t.TempDir(), "none.git")}, "main"); err == nil {
		t.Errorf("RemoteBranchHead of a missing repository: no error")
	}
	if _, _, err := RemoteBranchHead(context.Background(), RemoteSpec{URL: "file://" + bare}, "bad..name"); err == nil {
		t.Errorf("RemoteBranchHead of an invalid branch name: no error")
	}
}
