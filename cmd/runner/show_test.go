package main

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/runner-dev/runner/internal/cli"
	"github.com/runner-dev/runner/internal/ptytest"
)

// checkShow: `runner show` prints a task of the run with its diff, or its
// trajectory, escaped, through the pager only on a terminal.
func checkShow(t *testing.T, r *reportRun) {
	t.Run("show", func(t *testing.T) {
		h := r.results["hostile"]
		res := runBinary(t, "show", r.out, "hostile")
		if res.code != cli.ExitOK {
			t.Fatalf("runner show: %s", res)
		}
		for _, want := range []string{
			"task hostile · attempt 1 of 1 · check_failed",
			"branch:    " + evilBranch + " at " + h.Commit,
			"summary:\n  " + evilSummary,
			" " + evilFile + " | 1 +",
			"diff --git a/" + evilFile + " b/" + evilFile + "\nnew file mode 100644\n@@ -0,0 +1 @@\n+made",
		} {
			if !strings.Contains(res.stdout, want) {
				t.Errorf("runner show lacks %q:\n%s", want, res.stdout)
			}
		}
		// The diff is git's.
		stat := gitCLI(t, r.repoA, "diff", "--numstat", h.Base, h.Commit)
		if !strings.Contains(stat, "1\t0\t"+evilFile) {
			t.Errorf("git diff --numstat: %s", stat)
		}
		res = runBinary(t, "show", r.out, "hostile", "--trajectory")
		for _, want := range []string{
			"  ✗ run_command command=rm -rf /workspace/src\n      refused by the policy:",
			"  → run_command command=echo '" + evilOutput + "'\n      Exit code 0.",
			"check test -f never-there → exit 1",
			"the agent ended: completed after 5 step(s)",
		} {
			if !strings.Contains(res.stdout, want) {
				t.Errorf("runner show --trajectory lacks %q:\n%s", want, res.stdout)
			}
		}
		if res := runBinary(t, "show", r.out, "nope"); res.code != cli.ExitFailure || !strings.Contains(res.stderr, "task nope has no result") {
			t.Errorf("runner show of an unknown task: %s", res)
		}
		if res := runBinary(t, "show", r.out, "hostile", "--attempt", "2"); res.code != cli.ExitFailure || !strings.Contains(res.stderr, "no attempt 2") {
			t.Errorf("runner show of a missing attempt: %s", res)
		}

		// On a terminal, the text goes through $PAGER; in a pipe, never.
		paged := filepath.Join(t.TempDir(), "paged")
		tty, ptmx := ptytest.Open(t)
		cmd := exec.Command(runnerBinary(t), "show", r.out, "fix-heading")
		cmd.Env = append(os.Environ(), "NO_COLOR=1", "PAGER=cat > "+paged)
		cmd.Stdin, cmd.Stdout, cmd.Stderr = tty, tty, tty
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		tty.Close()
		tr := readTranscript(ptmx)
		if err := waitExit(cmd, time.Minute); err != nil {
			t.Fatal(err)
		}
		<-tr.done
		got, err := os.ReadFile(paged)
		if err != nil || !strings.Contains(string(got), "-# Helo\n+# Hello") || cmd.ProcessState.ExitCode() != 0 {
			t.Errorf("the pager got %q (%v), exit %d; the terminal:\n%s", got, err, cmd.ProcessState.ExitCode(), tr.String())
		}
		if strings.Contains(tr.String(), "# Hello") {
			t.Errorf("runner show wrote to the terminal past the pager:\n%s", tr.String())
		}
		piped := exec.Command(runnerBinary(t), "show", r.out, "fix-heading")
		piped.Env = append(os.Environ(), "PAGER=touch "+paged+".used")
		if out, err := piped.Output(); err != nil || !strings.Contains(string(out), "+# Hello") {
			t.Errorf("runner show into a pipe: %v\n%s", err, out)
		}
		if _, err := os.Stat(paged + ".used"); err == nil {
			t.Errorf("the pager ran with stdout a pipe")
		}
	})
}
