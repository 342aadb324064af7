package main

import (
	"fmt"
	"io/fs"
	"net/http"
	"net/http/cgi"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/runner-dev/runner/internal/dockertest"
	"github.com/runner-dev/runner/internal/fakellm"
	"github.com/runner-dev/runner/tasks"
)

// gitServer serves the bare repositories under root over smart HTTP on
// 127.0.0.1 (git http-backend), for a basic-auth token only.
func gitServer(t *testing.T, root, token string) (url string, seen func() []string) {
	t.Helper()
	const backend = "/usr/lib/git-core/git-http-backend"
	if _, err := os.Stat(backend); err != nil {
		t.Fatalf("git http-backend is needed (it comes with git): %v", err)
	}
	h := &cgi.Handler{Path: backend, Env: []string{"GIT_PROJECT_ROOT=" + root, "GIT_HTTP_EXPORT_ALL=1",
		"REMOTE_USER=runner", "GIT_CONFIG_NOSYSTEM=1", "GIT_CONFIG_GLOBAL=" + os.DevNull}}
	var mu sync.Mutex
	var passwords []string
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, pass, ok := r.BasicAuth()
		mu.Lock()
		passwords = append(passwords, pass)
		mu.Unlock()
		if !ok || pass != token {
			w.Header().Set("WWW-Authenticate", `Basic realm="git"`)
			http.Error(w, "unauthorized", http.StatusUnauthorized)
			return
		}
		h.ServeHTTP(w, r)
	}))
	t.Cleanup(srv.Close)
	return srv.URL, func() []string { mu.Lock(); defer mu.Unlock(); return append([]string(nil), passwords...) }
}

// A canary API key, the git tokens of the environment (RUNNER_GIT_TOKEN,
// the one sent, and GITHUB_TOKEN), a token inside a repository URL and a
// configured secret appear nowhere: not in the sandbox (environment,
// files, .git/config), the runner's output and debug log, the
// trajectories, the results, the commit message, the pushed branch or the
// error strings.
func TestSecretsAppearNowhere(t *testing.T) {
	const (
		apiKey      = "sk-canary-apikey-4b1f9e2d7c"
		gitToken    = "canary-runnergittoken-5kq8w1"
		githubToken = "canary-githubtoken-p3z7r0"
		urlToken    = "canary-urltoken-83jd92ka"
		configured  = "canary-dbpass-x7q2m9"
	)
	src, _ := sourceRepo(t, map[string]string{"app.txt": "v1\n"})
	root := t.TempDir()
	gitCLI(t, root, "clone", "-q", "--bare", src, filepath.Join(root, "app.git"))
	// RUNNER_GIT_TOKEN goes before GITHUB_TOKEN and before the URL's own.
	base, seen := gitServer(t, root, gitToken)
	withToken := strings.Replace(base, "http://", "http://x-access-token:"+urlToken+"@", 1)

	srv, _ := modelServer(t, map[string][]fakellm.Turn{
		"Change the app": {
			// Everything the sandbox shows of itself goes back to the model.
			fakellm.ToolCall("run_command", `{"command":"env; tr '\\0' '\\n' </proc/1/environ; cat .git/config; git remote -v; grep -rl canary- /etc /home /workspace /tmp 2>/dev/null | head"}`),
			edit("app.txt", "v1", "v2"),
			// A model that repeats a secret in its summary.
			complete("Done. The key is " + apiKey + " and the password " + configured + " and the tokens " + urlToken +
				", " + gitToken + ", " + githubToken),
		},
	})
	file := writeTaskFile(t, fmt.Sprintf(`
defaults: {image: %s}
tasks:
  - {id: leak, repo: "%s/app.git", prompt: "Change the app."}
  - {id: missing, repo: "%s/missing.git", prompt: "Never runs."}
`, dockertest.Busybox(t), withToken, withToken))
	out := filepath.Join(t.TempDir(), "out")
	cmd := runnerCmd(t, srv, "run", file, "--out", out, "--secret-env", "DB_PASSWORD", "--log-level", "debug")
	cmd.Env = append(cmd.Env, "OPENAI_API_KEY="+apiKey, "DB_PASSWORD="+configured,
		"RUNNER_GIT_TOKEN="+gitToken, "GITHUB_TOKEN="+githubToken)
	var stdout, stderr strings.Builder
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	cmd.Run()
	secrets := []string{apiKey, gitToken, githubToken, urlToken, configured}

	// The secrets were really in play: the key reached the model API and the
	// token the git server.
	reqs := srv.Requests()
	if len(reqs) == 0 || reqs[0].Header.Get("Authorization") != "Bearer "+apiKey {
		t.Fatalf("the model API did not get the key: %d requests", len(reqs))
	}
	if !strings.Contains(strings.Join(seen(), " "), gitToken) {
		t.Fatalf("the git server never saw RUNNER_GIT_TOKEN")
	}
	results := byID(readResultLines(t, out))
	if r := results["leak"]; r.Status != tasks.StatusSucceeded || !r.Pushed {
		t.Fatalf("result of leak = %+v\n%s", r, stderr.String())
	}
	if r := results["missing"]; r.Status != tasks.StatusError || !strings.Contains(r.Error, "clone") {
		t.Errorf("result of missing = %+v, want a clone error", r)
	}

	// What the sandbox showed the model (tool results) holds no secret.
	for i, r := range reqs {
		for _, m := range r.Messages {
			for _, s := range secrets {
				if m.Role == "tool" && strings.Contains(m.Content, s) {
					t.Errorf("request %d: the sandbox showed %q to the model:\n%s", i+1, s, m.Content)
				}
			}
		}
	}
	check := func(where, text string) {
		for _, s := range secrets {
			if strings.Contains(text, s) {
				t.Errorf("%s contains the secret %q", where, s)
			}
		}
	}
	check("runner's stdout", stdout.String())
	check("runner's stderr", stderr.String())
	filepath.WalkDir(out, func(p string, d fs.DirEntry, err error) error {
		if err == nil && d.Type().IsRegular() {
			b, _ := os.ReadFile(p)
			check(p, string(b))
		}
		return nil
	})
	msg := gitCLI(t, filepath.Join(root, "app.git"), "log", "-1", "--format=%B", "agent/leak")
	check("the commit message", msg)
	if !strings.Contains(msg, "[REDACTED]") {
		t.Errorf("the summary's secrets were not masked in the commit message:\n%s", msg)
	}
	check("the pushed repository's config", gitCLI(t, filepath.Join(root, "app.git"), "config", "--list"))
	check("the pushed branch", gitCLI(t, filepath.Join(root, "app.git"), "log", "-p", "--format=%H %an %ae %B", "main..agent/leak"))
}
