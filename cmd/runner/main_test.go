package main

import (
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/runner-dev/runner/internal/dockertest"
)

// binDir holds the runner binary built for the end-to-end tests.
var binDir string

func TestMain(m *testing.M) {
	if helper := os.Getenv("RUNNER_TEST_HELPER"); helper != "" {
		os.Exit(runHelper(helper))
	}
	// Every git process, ours and those started for local transports,
	// ignores the machine's configuration.
	for k, v := range map[string]string{
		"GIT_CONFIG_GLOBAL":   os.DevNull,
		"GIT_CONFIG_NOSYSTEM": "1",
		"GIT_TERMINAL_PROMPT": "0",
		"GIT_AUTHOR_NAME":     "Test Author",
		"GIT_AUTHOR_EMAIL":    "author@example.com",
		"GIT_COMMITTER_NAME":  "Test Author",
		"GIT_COMMITTER_EMAIL": "author@example.com",
	} {
		os.Setenv(k, v)
	}
	var err error
	if binDir, err = os.MkdirTemp("", "runner-bin-"); err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	code := dockertest.Main(m)
	os.RemoveAll(binDir)
	os.Exit(code)
}

var (
	buildOnce sync.Once
	buildErr  error
)

// runnerBinary builds the runner binary once per test process and returns
// its path. It is built as released (CGO_ENABLED=0, a static executable).
func runnerBinary(t *testing.T) string {
	t.Helper()
	bin := filepath.Join(binDir, "runner")
	buildOnce.Do(func() {
		// The sandbox helper beside it, as installed.
		build := exec.Command("go", "build", "-o", binDir+"/", ".", "../sandbox-channel")
		build.Env = append(os.Environ(), "CGO_ENABLED=0")
		out, err := build.CombinedOutput()
		if err != nil {
			buildErr = fmt.Errorf("go build: %v\n%s", err, out)
		}
	})
	if buildErr != nil {
		t.Fatal(buildErr)
	}
	return bin
}

// cmdResult is what one run of runner printed and its exit code.
type cmdResult struct {
	stdout, stderr string
	code           int
}

func (r cmdResult) String() string {
	return fmt.Sprintf("exit code %d\nstdout:\n%s\nstderr:\n%s", r.code, r.stdout, r.stderr)
}

// runMain runs the command line args through Main, in this process.
func runMain(t *testing.T, args ...string) cmdResult {
	t.Helper()
	var stdout, stderr bytes.Buffer
	code := Main(args, strings.NewReader(""), &stdout, &stderr)
	return cmdResult{stdout: stdout.String(), stderr: stderr.String(), code: code}
}

// nonEmptyLines splits s into its non-empty lines.
func nonEmptyLines(s string) []string {
	var out []string
	for _, l := range strings.Split(s, "\n") {
		if strings.TrimSpace(l) != "" {
			out = append(out, l)
		}
	}
	return out
}

func writeFile(t *testing.T, path, content string) {
	t.Helper()
	if err := os.WriteFile(path, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
}

func fileExists(path string) bool {
	_, err := os.Stat(path)
	return err == nil
}
