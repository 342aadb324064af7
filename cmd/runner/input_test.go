package main

import (
	"bytes"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/runner-dev/runner/internal/cli"
)

// startBinary starts the built runner binary with args; wait returns its
// result, failing the test if it has not ended within a minute (the cases
// below used to block for ever or read without end).
func startBinary(t *testing.T, args ...string) (cmd *exec.Cmd, wait func() cmdResult) {
	t.Helper()
	cmd = exec.Command(runnerBinary(t), args...)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	t.Cleanup(func() { cmd.Process.Kill() })
	return cmd, func() cmdResult {
		t.Helper()
		var err error
		select {
		case err = <-done:
		case <-time.After(time.Minute):
			cmd.Process.Kill()
			<-done
			t.Fatalf("runner %s still running after a minute:\n%s", strings.Join(args, " "), stderr.String())
		}
		res := cmdResult{stdout: stdout.String(), stderr: stderr.String()}
		var exit *exec.ExitError
		switch {
		case errors.As(err, &exit):
			res.code = exit.ExitCode()
		case err != nil:
			t.Fatal(err)
		}
		return res
	}
}

// A prompt_file that is a FIFO, a device or a huge file is a problem with
// its place, found at once: validate never blocks on it, nor reads it
// whole.
func TestValidatePromptFileKinds(t *testing.T) {
	dir := t.TempDir()
	if err := syscall.Mkfifo(filepath.Join(dir, "fifo"), 0o644); err != nil {
		t.Fatal(err)
	}
	big, err := os.Create(filepath.Join(dir, "big.md"))
	if err != nil {
		t.Fatal(err)
	}
	if err := big.Truncate(2 << 30); err != nil { // 2 GiB, sparse
		t.Fatal(err)
	}
	big.Close()
	file := filepath.Join(dir, "tasks.yaml")
	writeFile(t, file, `tasks:
  - {id: fifo, repo: https://example.com/r.git, prompt_file: fifo}
  - {id: zero, repo: https://example.com/r.git, prompt_file: /dev/zero}
  - {id: big, repo: https://example.com/r.git, prompt_file: big.md}
`)
	_, wait := startBinary(t, "validate", file)
	res := wait()
	if res.code != cli.ExitUsage {
		t.Fatalf("runner validate: %s", res)
	}
	checkLines(t, "stderr", res.stderr, []string{
		file + `:2:62: task "fifo": prompt_file: read prompt: ` + filepath.Join(dir, "fifo") + " is a FIFO; want a regular file",
		file + `:3:62: task "zero": prompt_file: read prompt: /dev/zero is a device; want a regular file`,
		file + `:4:61: task "big": prompt_file: big.md is 2g, over the 4m cap (raise max_prompt_size in defaults if this prompt is meant)`,
		"runner: 3 problems in 1 of 1 task file",
	})
}

// The first SIGTERM stops validate even while it waits on a task file that
// is a pipe whose writer stalls.
func TestValidateStopsOnFirstSignal(t *testing.T) {
	fifo := filepath.Join(t.TempDir(), "tasks.yaml")
	if err := syscall.Mkfifo(fifo, 0o644); err != nil {
		t.Fatal(err)
	}
	cmd, wait := startBinary(t, "validate", fifo)
	// Opening the writer end without blocking succeeds once runner has
	// the FIFO open for reading; then it waits for data that never comes.
	var w *os.File
	waitUntil(t, time.Minute, "runner to open the task file", func() bool {
		f, err := os.OpenFile(fifo, os.O_WRONLY|syscall.O_NONBLOCK, 0)
		w = f
		return err == nil
	})
	defer w.Close()
	cmd.Process.Signal(syscall.SIGTERM)
	res := wait()
	if res.code != cli.ExitInterrupted || !strings.Contains(res.stderr, "runner: interrupted") {
		t.Errorf("runner validate on a stalled pipe, after SIGTERM: %s", res)
	}
}

// Task files in JSON Lines with invalid UTF-8 are refused with the place;
// one that starts with a byte order mark is read.
func TestValidateEncoding(t *testing.T) {
	dir := t.TempDir()
	bad := filepath.Join(dir, "bad.jsonl")
	writeFile(t, bad, `{"id": "a", "repo": "https://example.com/r.git", "prompt": "caf`+"\xe9"+`"}`+"\n")
	bom := filepath.Join(dir, "bom.jsonl")
	writeFile(t, bom, "\xef\xbb\xbf"+`{"id": "a", "repo": "https://example.com/r.git", "prompt": "p"}`+"\n")
	res := runBinary(t, "validate", bad, bom)
	if res.code != cli.ExitUsage {
		t.Fatalf("runner validate: %s", res)
	}
	checkLines(t, "stderr", res.stderr, []string{
		bad + ":1:64: invalid UTF-8 (byte 0xe9); task files must be UTF-8 text",
		"runner: 1 problem in 1 of 2 task files",
	})
	checkLines(t, "stdout", res.stdout, []string{bom + ": 1 task (jsonl)"})
}
