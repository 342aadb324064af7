package main

import (
	"bytes"
	"errors"
	"os/exec"
	"strings"
	"testing"

	"github.com/runner-dev/runner/internal/cli"
)

// runBinary runs the built runner binary with args.
func runBinary(t *testing.T, args ...string) cmdResult {
	t.Helper()
	cmd := exec.Command(runnerBinary(t), args...)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	err := cmd.Run()
	res := cmdResult{stdout: stdout.String(), stderr: stderr.String()}
	var exit *exec.ExitError
	switch {
	case errors.As(err, &exit):
		res.code = exit.ExitCode()
	case err != nil:
		t.Fatalf("run runner: %v", err)
	}
	return res
}

// The built binary behaves as Main does in process: exit codes, streams,
// and plain output when stdout is not a terminal.
func TestBinary(t *testing.T) {
	res := runBinary(t, "--help")
	if res.code != cli.ExitOK || !strings.Contains(res.stdout, "Usage:\n  runner [command]") || res.stderr != "" {
		t.Errorf("runner --help: %s", res)
	}

	res = runBinary(t, "validate", exampleYAML, exampleJSONL)
	if res.code != cli.ExitOK || res.stderr != "" {
		t.Fatalf("runner validate: %s", res)
	}
	checkLines(t, "stdout", res.stdout, []string{exampleYAML + ": 3 tasks (yaml)", exampleJSONL + ": 3 tasks (jsonl)"})
	if strings.Contains(res.stdout, "\x1b[") {
		t.Errorf("escape sequences in output to a pipe: %q", res.stdout)
	}

	res = runBinary(t, "validate", mistakesYAML)
	if res.code != cli.ExitUsage || res.stdout != "" {
		t.Fatalf("runner validate of a bad file: %s", res)
	}
	checkLines(t, "stderr", res.stderr, append(mistakes, "runner: 9 problems"))
}
