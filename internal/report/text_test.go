package report

import (
	"bytes"
	"context"
	"regexp"
	"strings"
	"testing"

	"github.com/runner-dev/runner/gitops"
	"github.com/runner-dev/runner/tasks"
)

// terminalHostile is what a terminal would obey, and a line that would
// pass for one of runner's.
const terminalHostile = "\x1b]0;pwned\a\x1b[2J\u009b31m\u202eevil\nbranch:    forged"

// ownSGR matches the colour sequences the terminal view writes.
var ownSGR = regexp.MustCompile(`\x1b\[(0|1|2|31|32|36)m`)

// noControls fails when text holds a control character other than the
// line end, once the view's own colours are taken out.
func noControls(t *testing.T, text string) {
	t.Helper()
	for _, r := range ownSGR.ReplaceAllString(text, "") {
		if r != '\n' && (r < 0x20 || r == 0x7f || r >= 0x80 && r <= 0x9f || r == '\u202e') {
			t.Errorf("a raw %U reaches the terminal:\n%q", r, text)
			return
		}
	}
}

// The terminal view shows a task's status, cost, summary, diff stat and
// diff, or its timeline; every untrusted text is escaped, with or without
// colour, and none of its lines passes for one of the view's own.
func TestWriteText(t *testing.T) {
	out, commit := fixtureOut(t)
	run, err := Load(out, nil)
	if err != nil {
		t.Fatal(err)
	}
	r := run.Task("hostile").Latest()
	r.Summary += terminalHostile
	r.Error = terminalHostile
	r.Questions = append(r.Questions, terminalHostile)
	r.Excluded = append(r.Excluded, terminalHostile)
	r.Warnings = append(r.Warnings, terminalHostile)
	a := ReadAttempt(context.Background(), out, r, gitops.DiffLimits{})
	a.Diff.Files[1].Lines = append(a.Diff.Files[1].Lines, "+\tindented"+terminalHostile)

	for _, color := range []bool{false, true} {
		var buf bytes.Buffer
		if err := WriteText(&buf, a, TextOptions{Color: color, Of: 1}); err != nil {
			t.Fatal(err)
		}
		text := buf.String()
		noControls(t, text)
		if !color && ownSGR.MatchString(text) {
			t.Errorf("colours without colour:\n%s", text)
		}
		plain := ownSGR.ReplaceAllString(text, "")
		for _, want := range []string{
			"task hostile · attempt 1 of 1 · check_failed",
			"branch:    " + hostileBranch + " at " + commit,
			"cost:      $0.0123 · 3 model call(s) · 3 step(s) · 3,000 tokens in (1,000 cached) · 200 out\nbudget:    25% of its $0.05 spent",
			"warnings:\n  " + hostileWarning + "\n  " + `\x1b]0;pwned\a\x1b[2J\u009b31m\u202eevil`,
			`error:     \x1b]0;pwned\a\x1b[2J\u009b31m\u202eevil\nbranch:    forged`,
			" " + hostileFile + " | 1 +\n README.md                        | 2 +-\n 2 file(s) changed, 2 insertion(s)(+), 1 deletion(s)(-)",
			"diff --git a/" + hostileFile + " b/" + hostileFile + "\nnew file mode 100644\n@@ -0,0 +1 @@\n+" + hostileContent,
			"+       indented" + `\x1b]0;pwned`,
			"  " + hostileSummary + `\x1b]0;pwned\a\x1b[2J\u009b31m\u202eevil`,
			"left out of the commit by the exclude list (9 file(s)):\n  __pycache__/\n  " + hostileExcluded + "\n  " +
				`\x1b]0;pwned\a\x1b[2J\u009b31m\u202eevil\nbranch:    forged` + "\n  … 3 more",
		} {
			if !strings.Contains(plain, want) {
				t.Errorf("the view (colour %v) lacks %q:\n%s", color, want, plain)
			}
		}
		for _, line := range strings.Split(plain, "\n") {
			if strings.HasPrefix(line, "branch:    forged") {
				t.Errorf("an untrusted line passes for the view's own: %q", line)
			}
		}
	}

	var buf bytes.Buffer
	if err := WriteText(&buf, a, TextOptions{Trajectory: true}); err != nil {
		t.Fatal(err)
	}
	text := buf.String()
	noControls(t, text)
	for _, want := range []string{
		"2 model call(s), $0.0080, 1 retried attempt(s), 1 compaction(s), 1 call(s) refused by the policy",
		"prompt\n  " + hostilePrompt,
		"step 1 +1.0s · $0.0040 · 1,000 in (500 cached) / 50 out · 3.0s",
		"  retry: attempt 1 failed, next in 1.0s: 500 <i>Internal</i>",
		"  │ Let me look.",
		"  → run_command command=echo '</script><img src=x onerror=alert(8)>'\n      <svg onload=alert(6)>",
		"  ✗ run_command command=git push\n      refused by the policy: the command matches the deny rule <push>",
		"history compacted (elide) +6.0s: 2 message(s) replaced, 9,000 → 3,000 tokens",
		"the agent ended: completed after 2 step(s)",
		"check test -f </script> → exit 1",
	} {
		if !strings.Contains(text, want) {
			t.Errorf("the trajectory view lacks %q:\n%s", want, text)
		}
	}
	if strings.Contains(text, "diff --git") {
		t.Errorf("the trajectory view shows the diff")
	}
	_ = tasks.StatusSucceeded
}
