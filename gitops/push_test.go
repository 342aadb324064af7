package gitops

import (
	"bytes"
	"context"
	"errors"
	"path/filepath"
	"strings"
	"testing"
)

// committed returns a user repository with branch holding one CommitTree
// commit, and its hash.
func committed(t *testing.T, branch string) (repo, hash string) {
	t.Helper()
	repo, base := newRepo(t, map[string]file{"a.txt": {content: "a\n"}})
	res, err := CommitTree(context.Background(), repo, base, bytes.NewReader(tarOf(t, entry{name: "a.txt", body: "agent\n"})), CommitOptions{Branch: branch})
	if err != nil {
		t.Fatal(err)
	}
	return repo, res.Hash.String()
}

func bareRemote(t *testing.T) string {
	t.Helper()
	dir := filepath.Join(t.TempDir(), "remote.git")
	gitRun(t, t.TempDir(), "init", "-q", "--bare", dir)
	return dir
}

func remoteRef(t *testing.T, remote, branch string) (string, bool) {
	t.Helper()
	out, err := gitTry(remote, "rev-parse", "--verify", "--quiet", "refs/heads/"+branch)
	return out, err == nil
}

func TestPushAndRollback(t *testing.T) {
	for _, scheme := range []string{"path", "file://"} {
		t.Run(scheme, func(t *testing.T) {
			repo, hash := committed(t, "runner/push")
			remote := bareRemote(t)
			url := remote
			if scheme == "file://" {
				url = "file://" + remote
			}
			before := stateOf(t, repo)
			ctx := context.Background()

			if err := Push(ctx, repo, RemoteSpec{URL: url}, "runner/push", false); err != nil {
				t.Fatalf("Push: %v", err)
			}
			if got, _ := remoteRef(t, remote, "runner/push"); got != hash {
				t.Errorf("remote branch = %q, want %s", got, hash)
			}
			fsckStrict(t, remote)
			if err := Push(ctx, repo, RemoteSpec{URL: url}, "runner/push", false); err != nil {
				t.Errorf("second Push (up to date) = %v, want nil", err)
			}
			if got := gitRun(t, repo, "for-each-ref", "--format=%(refname)", "refs/remotes"); got != "" {
				t.Errorf("Push created remote-tracking refs: %s", got)
			}
			assertStateUnchanged(t, repo, before)

			if err := Rollback(ctx, repo, "runner/push", &RemoteSpec{URL: url}); err != nil {
				t.Fatalf("Rollback: %v", err)
			}
			if _, ok := remoteRef(t, remote, "runner/push"); ok {
				t.Error("branch still on the remote after Rollback")
			}
			if branchExists(repo, "runner/push") {
				t.Error("branch still local after Rollback")
			}
			if err := Rollback(ctx, repo, "runner/push", &RemoteSpec{URL: url}); err != nil {
				t.Errorf("repeated Rollback = %v, want nil", err)
			}
			assertStateUnchanged(t, repo, before)
			fsckStrict(t, repo)
		})
	}
}

func TestPushRefusesNonFastForward(t *testing.T) {
	repo, _ := committed(t, "runner/ff")
	remote := bareRemote(t)
	ctx := context.Background()
	if err := Push(ctx, repo, RemoteSpec{URL: remote}, "runner/ff", false); err != nil {
		t.Fatal(err)
	}
	// Rewrite the branch from the base: the remote tip is no ancestor.
	base := gitRun(t, repo, "rev-parse", "main")
	res, err := CommitTree(ctx, repo, mustHash(base), bytes.NewReader(tarOf(t, entry{name: "a.txt", body: "rewritten\n"})), CommitOptions{Branch: "runner/ff", Force: true})
	if err != nil {
		t.Fatal(err)
	}
	err = Push(ctx, repo, RemoteSpec{URL: remote}, "runner/ff", false)
	if !errors.Is(err, ErrPushRejected) {
		t.Fatalf("Push of a rewritten branch = %v, want ErrPushRejected", err)
	}
	if err := Push(ctx, repo, RemoteSpec{URL: remote}, "runner/ff", true); err != nil {
		t.Fatalf("forced Push: %v", err)
	}
	if got, _ := remoteRef(t, remote, "runner/ff"); got != res.Hash.String() {
		t.Errorf("remote branch = %s after forced push, want %s", got, res.Hash)
	}
}

func TestPushAndRollbackRefusals(t *testing.T) {
	repo, _ := committed(t, "runner/x")
	remote := bareRemote(t)
	ctx := context.Background()
	if err := Push(ctx, repo, RemoteSpec{URL: remote}, "runner/missing", false); !errors.Is(err, ErrBranchNotFound) {
		t.Errorf("Push of a missing branch = %v, want ErrBranchNotFound", err)
	}
	if err := Push(ctx, repo, RemoteSpec{URL: remote}, "bad..name", false); !errors.Is(err, ErrInvalidBranch) {
		t.Errorf("Push of an invalid name = %v, want ErrInvalidBranch", err)
	}
	if err := Push(ctx, repo, RemoteSpec{URL: remote}, "main", false); err != nil {
		t.Fatal(err)
	}
	err := Rollback(ctx, repo, "main", &RemoteSpec{URL: remote})
	if !errors.Is(err, ErrBranchCheckedOut) {
		t.Fatalf("Rollback of HEAD's branch = %v, want ErrBranchCheckedOut", err)
	}
	if !branchExists(repo, "main") {
		t.Error("HEAD's branch deleted locally")
	}
	if _, ok := remoteRef(t, remote, "main"); !ok {
		t.Error("HEAD's branch deleted on the remote although Rollback refused")
	}
}

func TestPushOverHTTPWithToken(t *testing.T) {
	repo, hash := committed(t, "runner/http")
	root := t.TempDir()
	gitRun(t, root, "init", "-q", "--bare", filepath.Join(root, "r.git"))
	const token = "tok-push-77e1-never-stored"
	srv := newGitHTTP(t, root, token)
	url := srv.URL + "/r.git"
	before := stateOf(t, repo)
	ctx := context.Background()
	if err := Push(ctx, repo, RemoteSpec{URL: url, Auth: Credentials{Token: token}}, "runner/http", false); err != nil {
		t.Fatalf("Push: %v", err)
	}
	if got, _ := remoteRef(t, filepath.Join(root, "r.git"), "runner/http"); got != hash {
		t.Errorf("remote branch = %q, want %s", got, hash)
	}
	err := Rollback(ctx, repo, "runner/http", &RemoteSpec{URL: url, Auth: Credentials{Token: "tok-wrong-secret"}})
	if err == nil {
		t.Fatal("Rollback with a wrong token succeeded")
	}
	if strings.Contains(err.Error(), "tok-wrong-secret") {
		t.Errorf("error shows the token: %v", err)
	}
	if !branchExists(repo, "runner/http") {
		t.Error("local branch deleted although the remote deletion failed")
	}
	if err := Rollback(ctx, repo, "runner/http", &RemoteSpec{URL: url, Auth: Credentials{Token: token}}); err != nil {
		t.Fatalf("Rollback: %v", err)
	}
	if _, ok := remoteRef(t, filepath.Join(root, "r.git"), "runner/http"); ok {
		t.Error("branch still on the remote after Rollback")
	}
	assertNotStored(t, filepath.Join(repo, ".git"), token)
	assertStateUnchanged(t, repo, before)
}
