package report

import (
	"bufio"
	"fmt"
	"io"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/runner-dev/runner/gitops"
	"github.com/runner-dev/runner/internal/termsafe"
	"github.com/runner-dev/runner/tasks"
)

// TextOptions shape the terminal view of an attempt.
type TextOptions struct {
	// Color marks statuses and diff lines with ANSI colours.
	Color bool
	// Trajectory shows the turn-by-turn timeline instead of the diff.
	Trajectory bool
	// Of is how many attempts the task has.
	Of int
}

// ANSI colours of the terminal view.
const (
	ansiBold  = "\x1b[1m"
	ansiGreen = "\x1b[32m"
	ansiRed   = "\x1b[31m"
	ansiCyan  = "\x1b[36m"
	ansiDim   = "\x1b[2m"
	ansiReset = "\x1b[0m"
)

// maxResultLines is how many lines of a tool's result the terminal view
// of a trajectory shows.
const maxResultLines = 20

// textWriter writes runner's own text and untrusted text, escaped by
// termsafe, with colours when asked.
type textWriter struct {
	w     *bufio.Writer
	color bool
	// pad starts every line written: the nesting of a sub-agent's entries.
	pad string
}

// painted is text escaped and coloured by paint, printed as it is.
type painted string

// paint escapes s and colours it.
func (t *textWriter) paint(code, s string) painted {
	s = termsafe.Escape(s)
	if !t.color || s == "" {
		return painted(s)
	}
	return painted(code + s + ansiReset)
}

// line writes a line of runner's own format; its string arguments are
// untrusted and escaped, painted ones are printed as they are.
func (t *textWriter) line(format string, a ...any) {
	for i, v := range a {
		if s, ok := v.(string); ok {
			a[i] = termsafe.Escape(s)
		}
	}
	t.write(fmt.Sprintf(format+"\n", a...))
}

// write writes lines already escaped, each after the pad but blank ones.
func (t *textWriter) write(s string) {
	if t.pad != "" {
		lines := strings.SplitAfter(s, "\n")
		for i, l := range lines {
			if l != "" && l != "\n" {
				lines[i] = t.pad + l
			}
		}
		s = strings.Join(lines, "")
	}
	t.w.WriteString(s)
}

// block writes untrusted multi-line text, each line escaped and indented.
func (t *textWriter) block(indent, text string, max int) {
	lines := strings.Split(strings.TrimRight(text, "\n"), "\n")
	for i, l := range lines {
		if max > 0 && i == max {
			t.line("%s%s", indent, t.paint(ansiDim, fmt.Sprintf("… %d more line(s)", len(lines)-max)))
			return
		}
		t.write(indent + termsafe.Escape(expandTabs(strings.TrimSuffix(l, "\r"))) + "\n")
	}
}

// expandTabs replaces tabs with spaces to the next multiple of 8 columns,
// as a terminal shows them (termsafe would show them as \t).
func expandTabs(s string) string {
	if !strings.Contains(s, "\t") {
		return s
	}
	var b strings.Builder
	col := 0
	for _, r := range s {
		if r == '\t' {
			n := 8 - col%8
			b.WriteString(strings.Repeat(" ", n))
			col += n
			continue
		}
		b.WriteRune(r)
		col++
	}
	return b.String()
}

func statusColor(s tasks.Status) string {
	if s == tasks.StatusSucceeded {
		return ansiGreen
	}
	return ansiRed
}

// WriteText writes attempt a for a terminal: its status and why, its cost,
// the agent's summary and questions, what the exclude list left out of
// the commit, then the diff stat and the diff (or,
// with Trajectory, the timeline). Everything that came from the agent or
// a repository is escaped by termsafe.
func WriteText(w io.Writer, a *Attempt, opt TextOptions) error {
	t := &textWriter{w: bufio.NewWriter(w), color: opt.Color}
	r := a.Result
	of := ""
	if opt.Of > 0 {
		of = fmt.Sprintf(" of %d", opt.Of)
	}
	t.line("%s · attempt %d%s · %s", t.paint(ansiBold, "task "+r.ID), r.Attempt, of,
		t.paint(statusColor(r.Status), string(r.Status)))
	t.line("  %s", a.Explain())
	if r.Continues > 0 {
		t.line("continues: attempt %d (its branch and history)", r.Continues)
	}
	t.attempts(r)
	if r.Error != "" {
		t.line("error:     %s", r.Error)
	}
	repo := r.Repo
	if r.Ref != "" {
		repo += " at " + r.Ref
	}
	t.line("repo:      %s", repo)
	if r.Commit != "" {
		pushed := ""
		if r.Pushed {
			pushed = " (pushed)"
		}
		t.line("branch:    %s at %s%s", r.Branch, r.Commit, pushed)
	} else {
		t.line("branch:    none: nothing was committed")
	}
	t.line("cost:      $%.4f · %d model call(s) · %d step(s) · %s tokens in (%s cached) · %s out",
		r.CostUSD, r.Calls, r.Steps, formatNum(r.Tokens.In), formatNum(r.Tokens.Cached), formatNum(r.Tokens.Out))
	if r.BudgetUSD > 0 {
		t.line("budget:    %.0f%% of its $%.2f spent", 100*r.BudgetShare, r.BudgetUSD)
	}
	t.line("time:      %s, %s to %s", formatDuration(time.Duration(r.Duration)),
		r.StartedAt.UTC().Format("2006-01-02 15:04:05Z"), r.FinishedAt.UTC().Format("2006-01-02 15:04:05Z"))
	if len(r.Warnings) > 0 {
		t.line("\nwarnings:")
		for _, w := range r.Warnings {
			t.block("  ", w, 0)
		}
	}
	if r.Summary != "" {
		t.line("\nsummary:")
		t.block("  ", r.Summary, 0)
	}
	if len(r.Questions) > 0 {
		t.line("\nquestions asked:")
		for i, q := range r.Questions {
			t.line("  %d.", i+1)
			t.block("     ", q, 0)
		}
	}
	if len(r.Excluded) > 0 {
		t.line("\nleft out of the commit by the exclude list (%d file(s)):", r.ExcludedFiles)
		for _, p := range r.Excluded {
			t.line("  %s", p)
		}
		if r.ExcludedMore > 0 {
			t.line("  %s", t.paint(ansiDim, fmt.Sprintf("… %d more", r.ExcludedMore)))
		}
	}
	if opt.Trajectory {
		t.line("")
		if a.TimelineError != "" {
			t.line("the trajectory cannot be read: %s", a.TimelineError)
		}
		if a.Timeline != nil {
			t.timeline(a.Timeline)
		}
		return t.w.Flush()
	}
	if a.DiffError != "" {
		t.line("\nthe diff cannot be shown: %s", a.DiffError)
	}
	if a.Diff != nil {
		t.line("")
		t.stat(a.Diff)
		t.diff(a.Diff)
	}
	return t.w.Flush()
}

// stat writes the diff stat as `git diff --stat` does.
func (t *textWriter) stat(d *gitops.CommitDiff) {
	width, most := 0, 0
	for _, f := range d.Files {
		width = max(width, utf8.RuneCountInString(termsafe.Escape(fileName(f))))
		most = max(most, f.Added+f.Deleted)
	}
	width = min(width, 60)
	for _, f := range d.Files {
		name := []rune(termsafe.Escape(fileName(f)))
		if len(name) > width {
			name = append([]rune("…"), name[len(name)-width+1:]...)
		}
		var count string
		switch {
		case f.Binary:
			count = "Bin"
		case f.Submodule:
			count = "submodule"
		case !f.Counted:
			count = "not shown"
		default:
			plus, minus := f.Added, f.Deleted
			if most > 40 {
				plus, minus = (plus*40+most-1)/most, (minus*40+most-1)/most
			}
			count = fmt.Sprintf("%d %s%s", f.Added+f.Deleted, t.paint(ansiGreen, strings.Repeat("+", plus)),
				t.paint(ansiRed, strings.Repeat("-", minus)))
		}
		fmt.Fprintf(t.w, " %s%s | %s\n", string(name), strings.Repeat(" ", width-len(name)), count)
	}
	fmt.Fprintf(t.w, " %d file(s) changed, %d insertion(s)(+), %d deletion(s)(-)\n", len(d.Files), d.Added, d.Deleted)
}

func fileName(f gitops.FileDiff) string {
	if f.OldPath != "" {
		return f.OldPath + " => " + f.Path
	}
	return f.Path
}

// diff writes each file's diff, git's way.
func (t *textWriter) diff(d *gitops.CommitDiff) {
	for _, f := range d.Files {
		t.line("")
		old := f.Path
		if f.OldPath != "" {
			old = f.OldPath
		}
		t.line("%s", t.paint(ansiBold, "diff --git a/"+old+" b/"+f.Path))
		switch {
		case f.Change == "added":
			t.line("%s", t.paint(ansiBold, "new file mode "+strings.TrimPrefix(f.NewMode, "0")))
		case f.Change == "deleted":
			t.line("%s", t.paint(ansiBold, "deleted file mode "+strings.TrimPrefix(f.OldMode, "0")))
		case f.OldMode != f.NewMode:
			t.line("%s", t.paint(ansiBold, "old mode "+strings.TrimPrefix(f.OldMode, "0")))
			t.line("%s", t.paint(ansiBold, "new mode "+strings.TrimPrefix(f.NewMode, "0")))
		}
		if f.OldPath != "" {
			t.line("%s", t.paint(ansiBold, "rename from "+f.OldPath))
			t.line("%s", t.paint(ansiBold, "rename to "+f.Path))
		}
		if f.Binary {
			t.line("Binary files differ")
		}
		if f.Note != "" {
			t.line("%s", t.paint(ansiDim, "("+f.Note+")"))
		}
		for _, l := range f.Lines {
			code := ""
			switch {
			case strings.HasPrefix(l, "@@"):
				code = ansiCyan
			case strings.HasPrefix(l, "+"):
				code = ansiGreen
			case strings.HasPrefix(l, "-"):
				code = ansiRed
			}
			fmt.Fprintln(t.w, t.paint(code, expandTabs(l)))
		}
		if f.Omitted > 0 {
			t.line("%s", t.paint(ansiDim, fmt.Sprintf("(%d more line(s) not shown)", f.Omitted)))
		}
	}
}

// timeline writes the agent's run turn by turn.
func (t *textWriter) timeline(tl *Timeline) {
	t.line("%d model call(s), $%.4f, %d retried attempt(s), %d compaction(s), %d call(s) refused by the policy",
		tl.Steps, tl.CostUSD, tl.Retries, tl.Compactions, tl.Refusals)
	for _, n := range tl.Notes {
		t.line("(%s)", n)
	}
	if !tl.Prompt.empty() {
		t.line("\n%s", t.paint(ansiBold, "prompt"))
		t.text("  ", tl.Prompt, 0)
	}
	defer func() { t.pad = "" }()
	for _, e := range tl.Entries {
		// A sub-agent's entries are indented under the delegate call
		// that started it, and named.
		t.pad = strings.Repeat("    ", e.Depth)
		who, of := "the agent", ""
		if e.Agent != "" {
			who, of = "sub-agent "+e.Agent, "sub-agent "+e.Agent+" · "
		}
		at := ""
		if !tl.Start.IsZero() && !e.Time.IsZero() {
			at = "+" + formatDuration(e.Time.Sub(tl.Start))
		}
		switch e.Kind {
		case KindMessage:
			t.line("\n%s %s", t.paint(ansiBold, "message to "+who), at)
			t.text("  ", e.Text, 0)
		case KindStep:
			purpose := ""
			if e.Purpose != "" {
				purpose = " (" + e.Purpose + ")"
			}
			t.line("\n%s %s · $%.4f · %s in (%s cached) / %s out · %s", t.paint(ansiBold, fmt.Sprintf("%sstep %d%s", of, e.Step, purpose)),
				at, e.CostUSD, formatNum(e.Tokens.PromptTokens), formatNum(e.Tokens.CachedTokens),
				formatNum(e.Tokens.CompletionTokens), formatDuration(e.Latency))
			if e.Error != "" {
				t.line("  %s %s", t.paint(ansiRed, "error:"), e.Error)
			}
			t.text("  │ ", e.Text, 0)
			for _, c := range e.Calls {
				t.call(c)
			}
		case KindRetry:
			t.line("  %s attempt %d failed, next in %s: %s", t.paint(ansiRed, "retry:"), e.Attempt, formatDuration(e.Wait), e.Error)
		case KindCompaction:
			t.line("\n%s %s: %d message(s) replaced, %s → %s tokens", t.paint(ansiBold, "history compacted ("+e.Stage+")"),
				at, e.Replaced, formatNum(e.TokensBefore), formatNum(e.TokensAfter))
		case KindCheck, KindSetup:
			code := ansiGreen
			if e.Failed {
				code = ansiRed
			}
			t.line("\n%s %s → %s %s", t.paint(ansiBold, e.Kind), e.Command, t.paint(code, e.Status), at)
			t.text("  ", e.Text, maxResultLines)
		case KindEnd:
			t.line("\n%s %s after %d step(s) %s", t.paint(ansiBold, who+" ended:"), e.Status, e.Step, at)
			if e.Error != "" {
				t.line("  %s", e.Error)
			}
		}
	}
}

func (t *textWriter) call(c Call) {
	var args []string
	for _, a := range c.Args {
		v := a.Value.Text
		if len(v) > 200 || strings.Contains(v, "\n") {
			v = fmt.Sprintf("(%d bytes)", len(v)+a.Value.Omitted)
		}
		args = append(args, a.Key+"="+v)
	}
	if c.Args == nil {
		args = append(args, c.Arguments.Text)
	}
	mark := t.paint(ansiCyan, "→")
	if c.Blocked != "" || c.IsError {
		mark = t.paint(ansiRed, "✗")
	}
	t.line("  %s %s %s", mark, c.Name, strings.Join(args, " "))
	for _, a := range c.Args {
		if v := a.Value.Text; len(v) > 200 || strings.Contains(v, "\n") {
			t.line("      %s:", a.Key)
			t.text("        ", a.Value, maxResultLines)
		}
	}
	if c.Blocked != "" {
		t.line("      %s %s", t.paint(ansiRed, "refused by the policy:"), c.Blocked)
		return
	}
	if c.HasResult {
		t.text("      ", c.Result, maxResultLines)
	}
}

// text writes an untrusted text cut to a size, and says what was cut.
func (t *textWriter) text(indent string, x Text, maxLines int) {
	if x.Text != "" {
		t.block(indent, x.Text, maxLines)
	}
	if x.Omitted > 0 {
		t.line("%s%s", indent, t.paint(ansiDim, fmt.Sprintf("… %d more byte(s)", x.Omitted)))
	}
}
