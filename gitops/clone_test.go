package gitops

import (
	"context"
	"errors"
	"io/fs"
	"net/http"
	"net/http/cgi"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
)

// sourceRepo makes a repository with main (two commits), feature (one more),
// an annotated tag v1 on the first commit and a lightweight tag lw.
func sourceRepo(t *testing.T) (dir string, commits map[string]string) {
	t.Helper()
	dir, _ = newRepo(t, map[string]file{"README.md": {content: "one\n"}, "run.sh": {content: "#!/bin/sh\n", mode: 0o755}, "l": {link: "README.md"}})
	commits = map[string]string{"c1": gitRun(t, dir, "rev-parse", "HEAD")}
	gitRun(t, dir, "tag", "-a", "-m", "version 1", "v1")
	writeFiles(t, dir, map[string]file{"README.md": {content: "two\n"}})
	gitRun(t, dir, "commit", "-q", "-am", "c2")
	commits["c2"] = gitRun(t, dir, "rev-parse", "HEAD")
	gitRun(t, dir, "tag", "lw")
	gitRun(t, dir, "checkout", "-q", "-b", "feature")
	writeFiles(t, dir, map[string]file{"feature.txt": {content: "f\n"}})
	gitRun(t, dir, "add", "feature.txt")
	gitRun(t, dir, "commit", "-q", "-m", "c3")
	commits["c3"] = gitRun(t, dir, "rev-parse", "HEAD")
	gitRun(t, dir, "checkout", "-q", "main")
	return dir, commits
}

func TestClone(t *testing.T) {
	src, commits := sourceRepo(t)
	tests := []struct {
		name        string
		url         string
		ref         string
		depth       int
		wantBase    string
		wantRef     string
		wantShallow bool
		wantFile    string // file expected in the worktree
	}{
		{"local path default branch", src, "", 0, commits["c2"], "refs/heads/main", false, "README.md"},
		{"file URL branch shallow", "file://" + src, "feature", 1, commits["c3"], "refs/heads/feature", true, "feature.txt"},
		{"full branch ref name", src, "refs/heads/feature", 0, commits["c3"], "refs/heads/feature", false, "feature.txt"},
		{"annotated tag shallow", src, "v1", 1, commits["c1"], "refs/tags/v1", true, "README.md"},
		{"lightweight tag", "file://" + src, "lw", 0, commits["c2"], "refs/tags/lw", false, "README.md"},
		{"short commit hash", src, commits["c1"][:8], 1, commits["c1"], "", false, "README.md"},
		{"full commit hash on a side branch", src, commits["c3"], 0, commits["c3"], "", false, "feature.txt"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dir := filepath.Join(t.TempDir(), "ws")
			ws, err := Clone(context.Background(), CloneOptions{URL: tt.url, Ref: tt.ref, Dir: dir, Depth: tt.depth})
			if err != nil {
				t.Fatalf("Clone: %v", err)
			}
			if ws.Base.String() != tt.wantBase || string(ws.Ref) != tt.wantRef || ws.Shallow != tt.wantShallow || ws.Dir != dir {
				t.Errorf("workspace = %+v, want base %s ref %q shallow %v", ws, tt.wantBase, tt.wantRef, tt.wantShallow)
			}
			if got := gitRun(t, dir, "rev-parse", "HEAD"); got != tt.wantBase {
				t.Errorf("HEAD = %s, want %s", got, tt.wantBase)
			}
			if got := gitRun(t, dir, "rev-parse", "--is-shallow-repository"); got != map[bool]string{true: "true", false: "false"}[tt.wantShallow] {
				t.Errorf("is-shallow-repository = %s, want %v", got, tt.wantShallow)
			}
			if got := gitRun(t, dir, "status", "--porcelain"); got != "" {
				t.Errorf("fresh clone is dirty:\n%s", got)
			}
			if _, err := os.Stat(filepath.Join(dir, tt.wantFile)); err != nil {
				t.Errorf("worktree lacks %s: %v", tt.wantFile, err)
			}
			if got := gitRun(t, dir, "config", "remote.origin.url"); got != ws.RemoteURL {
				t.Errorf("remote.origin.url = %q, want %q", got, ws.RemoteURL)
			}
			if tt.wantRef == "refs/heads/main" {
				if got := gitRun(t, dir, "symbolic-ref", "HEAD"); got != tt.wantRef {
					t.Errorf("HEAD -> %s, want %s", got, tt.wantRef)
				}
			}
			fsckStrict(t, dir)
		})
	}
}

func TestCloneFailures(t *testing.T) {
	src, _ := sourceRepo(t)
	t.Run("unknown ref", func(t *testing.T) {
		dir := t.TempDir()
		_, err := Clone(context.Background(), CloneOptions{URL: src, Ref: "no-such-branch", Dir: dir})
		if !errors.Is(err, ErrRefNotFound) {
			t.Fatalf("err = %v, want ErrRefNotFound", err)
		}
		assertEmptyDir(t, dir)
	})
	t.Run("unknown commit", func(t *testing.T) {
		dir := t.TempDir()
		_, err := Clone(context.Background(), CloneOptions{URL: src, Ref: strings.Repeat("ab", 20), Dir: dir})
		if !errors.Is(err, ErrRefNotFound) {
			t.Fatalf("err = %v, want ErrRefNotFound", err)
		}
		assertEmptyDir(t, dir)
	})
	t.Run("destination not empty", func(t *testing.T) {
		dir := t.TempDir()
		keep := filepath.Join(dir, "keep.txt")
		if err := os.WriteFile(keep, []byte("mine"), 0o644); err != nil {
			t.Fatal(err)
		}
		_, err := Clone(context.Background(), CloneOptions{URL: src, Dir: dir})
		if !errors.Is(err, ErrDirNotEmpty) {
			t.Fatalf("err = %v, want ErrDirNotEmpty", err)
		}
		if b, err := os.ReadFile(keep); err != nil || string(b) != "mine" {
			t.Errorf("existing file touched: %q, %v", b, err)
		}
	})
	t.Run("cancelled", func(t *testing.T) {
		ctx, cancel := context.WithCancel(context.Background())
		cancel()
		dir := t.TempDir()
		if _, err := Clone(ctx, CloneOptions{URL: src, Dir: dir}); err == nil {
			t.Fatal("Clone with a cancelled context succeeded")
		}
		assertEmptyDir(t, dir)
	})
}

func assertEmptyDir(t *testing.T, dir string) {
	t.Helper()
	entries, err := os.ReadDir(dir)
	if err != nil && !os.IsNotExist(err) {
		t.Fatal(err)
	}
	if len(entries) != 0 {
		t.Errorf("%s not empty after a failed clone: %v", dir, entries)
	}
}

// gitHTTP serves bare repositories under root with git's own smart-HTTP
// CGI, behind basic auth that only accepts token as the password.
type gitHTTP struct {
	*httptest.Server
	mu        sync.Mutex
	passwords []string
}

func (s *gitHTTP) seen() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]string(nil), s.passwords...)
}

const httpBackend = "/usr/lib/git-core/git-http-backend"

func newGitHTTP(t *testing.T, root, token string) *gitHTTP {
	t.Helper()
	if _, err := os.Stat(httpBackend); err != nil {
		t.Skipf("git-http-backend not available: %v", err)
	}
	backend := &cgi.Handler{Path: httpBackend, Env: []string{
		"GIT_PROJECT_ROOT=" + root, "GIT_HTTP_EXPORT_ALL=1", "REMOTE_USER=runner",
		"GIT_CONFIG_NOSYSTEM=1", "GIT_CONFIG_GLOBAL=" + os.DevNull,
	}}
	s := &gitHTTP{}
	s.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, pass, ok := r.BasicAuth()
		s.mu.Lock()
		s.passwords = append(s.passwords, pass)
		s.mu.Unlock()
		if !ok || pass != token {
			w.Header().Set("WWW-Authenticate", `Basic realm="git"`)
			http.Error(w, "unauthorized", http.StatusUnauthorized)
			return
		}
		backend.ServeHTTP(w, r)
	}))
	t.Cleanup(s.Close)
	return s
}

// assertNotStored fails if secret appears in any file below dir.
func assertNotStored(t *testing.T, dir, secret string) {
	t.Helper()
	err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil || !d.Type().IsRegular() {
			return err
		}
		b, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		if strings.Contains(string(b), secret) {
			t.Errorf("token stored in %s", p)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
}

func TestCloneOverHTTPWithToken(t *testing.T) {
	src, commits := sourceRepo(t)
	root := t.TempDir()
	gitRun(t, root, "clone", "-q", "--bare", src, filepath.Join(root, "src.git"))
	const token = "tok-3f9a1c-never-stored"
	srv := newGitHTTP(t, root, token)
	url := srv.URL + "/src.git"

	t.Run("token field", func(t *testing.T) {
		dir := filepath.Join(t.TempDir(), "ws")
		ws, err := Clone(context.Background(), CloneOptions{URL: url, Ref: "feature", Dir: dir, Depth: 1, Auth: Credentials{Token: token}})
		if err != nil {
			t.Fatalf("Clone: %v", err)
		}
		if ws.Base.String() != commits["c3"] || !ws.Shallow {
			t.Errorf("workspace = %+v, want shallow clone of %s", ws, commits["c3"])
		}
		if got := gitRun(t, dir, "config", "remote.origin.url"); got != url {
			t.Errorf("remote.origin.url = %q, want %q", got, url)
		}
		sent := false
		for _, p := range srv.seen() {
			sent = sent || p == token
		}
		if !sent {
			t.Errorf("server never received the token; passwords seen: %q", srv.seen())
		}
		assertNotStored(t, dir, token)
	})
	t.Run("credentials in the URL", func(t *testing.T) {
		dir := filepath.Join(t.TempDir(), "ws")
		withCreds := strings.Replace(url, "http://", "http://someone:"+token+"@", 1)
		ws, err := Clone(context.Background(), CloneOptions{URL: withCreds, Dir: dir})
		if err != nil {
			t.Fatalf("Clone: %v", err)
		}
		if ws.RemoteURL != url {
			t.Errorf("RemoteURL = %q, want %q", ws.RemoteURL, url)
		}
		if got := gitRun(t, dir, "config", "remote.origin.url"); got != url {
			t.Errorf("remote.origin.url = %q, want %q", got, url)
		}
		assertNotStored(t, dir, token)
	})
	t.Run("wrong token", func(t *testing.T) {
		dir := t.TempDir()
		const wrong = "tok-wrong-0000-secret"
		_, err := Clone(context.Background(), CloneOptions{URL: strings.Replace(url, "http://", "http://u:"+wrong+"@", 1), Dir: dir})
		if err == nil {
			t.Fatal("Clone with a wrong token succeeded")
		}
		if strings.Contains(err.Error(), wrong) {
			t.Errorf("error shows the token: %v", err)
		}
		assertEmptyDir(t, dir)
	})
}
