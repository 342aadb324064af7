package main

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/runner-dev/runner/internal/cli"
)

// A configured secret too short to be hidden, or a --secret-env variable
// that is not set, is refused before anything runs, naming the variable
// (or the task and its line): it would otherwise stay visible in what
// runner writes.
func TestShortSecretsAreRefused(t *testing.T) {
	repo, _ := sourceRepo(t, map[string]string{"a": "a\n"})
	file := writeTaskFile(t, fmt.Sprintf(`
tasks:
  - {id: fine, repo: %s, prompt: p}
  - {id: weak, repo: "https://bob:pw@example.com/o/r.git", prompt: p}
`, repo))
	good := writeTaskFile(t, fmt.Sprintf(`
tasks:
  - {id: fine, repo: %s, prompt: p}
  - {id: strong, repo: "https://bob:a-long-enough-password@example.com/o/r.git", prompt: p}
`, repo))
	long := "long-enough-value"
	tests := []struct {
		name      string
		env       map[string]string
		secretEnv []string
		want      []string // lines of stderr; nil: accepted
	}{
		{"the API key", map[string]string{"OPENAI_API_KEY": "EMPTY"}, nil, []string{
			"  OPENAI_API_KEY (the API key): the value is too short to be hidden safely: 5 characters, fewer than 8 " +
				"(masking a value that short would mask ordinary text everywhere); unset it if the endpoint needs no key"}},
		{"the git tokens", map[string]string{"RUNNER_GIT_TOKEN": "tok", "GITHUB_TOKEN": "1234567"}, nil, []string{
			"  RUNNER_GIT_TOKEN: the value is too short to be hidden safely: 3 characters",
			"  GITHUB_TOKEN: the value is too short to be hidden safely: 7 characters"}},
		{"a --secret-env variable", map[string]string{"DB_PASSWORD": "hunter2"}, []string{"DB_PASSWORD", "UNSET_ONE"}, []string{
			"  --secret-env DB_PASSWORD: the value is too short to be hidden safely: 7 characters",
			"  --secret-env UNSET_ONE: the variable is not set, so its secret would not be hidden"}},
		{"all long enough", map[string]string{"OPENAI_API_KEY": long, "RUNNER_GIT_TOKEN": long, "DB_PASSWORD": long},
			[]string{"DB_PASSWORD"}, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			for _, k := range []string{"OPENAI_API_KEY", "RUNNER_GIT_TOKEN", "GITHUB_TOKEN", "DB_PASSWORD", "UNSET_ONE"} {
				t.Setenv(k, tt.env[k])
			}
			t.Setenv("RUNNER_MODEL", "gpt-4o-mini")
			t.Setenv("DOCKER_HOST", "unix://"+filepath.Join(t.TempDir(), "no-engine.sock"))
			args := []string{"run", file, "--out", filepath.Join(t.TempDir(), "out")}
			if tt.want == nil {
				args[1] = good
			}
			for _, name := range tt.secretEnv {
				args = append(args, "--secret-env", name)
			}
			res := runMain(t, args...)
			if tt.want == nil {
				// Accepted: the run goes on, to the missing engine.
				if res.code != cli.ExitUsage || !strings.Contains(res.stderr, "Docker") || strings.Contains(res.stderr, "too short") {
					t.Fatalf("%s\nwant the secrets accepted and the engine missing", res)
				}
				return
			}
			if res.code != cli.ExitUsage {
				t.Fatalf("%s\nwant exit code 2", res)
			}
			want := append([]string{"runner: configuration error:"}, tt.want...)
			want = append(want, fmt.Sprintf(`  %s:4: task "weak": the credential in its repo URL: the value is too short to be hidden safely: 2 characters`, file))
			lines := strings.Split(strings.TrimSpace(res.stderr), "\n")
			if len(lines) != len(want) {
				t.Fatalf("stderr:\n%s\nwant %d lines", res.stderr, len(want))
			}
			for i, w := range want {
				if !strings.HasPrefix(lines[i], w) {
					t.Errorf("stderr line %d = %q, want it to start with %q", i+1, lines[i], w)
				}
			}
			if _, err := os.Stat(filepath.Join(args[3], "results.jsonl")); err == nil {
				t.Errorf("the out directory was created before the configuration was checked")
			}
		})
	}
}
