package progress

import (
	"bytes"
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/runner-dev/runner/internal/ptytest"
)

var t0 = time.Date(2026, 12, 1, 10, 0, 0, 0, time.UTC)

// board is a run of 10 tasks: two finished, three running in different
// phases.
func board() *Board {
	b := NewBoard(10, 20, t0)
	for i, id := range []string{"first", "second", "fix-the-very-long-named-task", "fourth", "fifth"} {
		b.Start(id, 0.5, t0.Add(time.Duration(i)*time.Second))
	}
	b.Finish("first", true, 0.01)
	b.Finish("second", false, 0.02)
	b.Phase("fix-the-very-long-named-task", "step", 12)
	b.Spend("fix-the-very-long-named-task", 0.1234, 1.5)
	b.Phase("fourth", "cloning", 0)
	b.Phase("fifth", "check", 0)
	return b
}

func TestBoardLines(t *testing.T) {
	now := t0.Add(42 * time.Second)
	tests := []struct {
		name          string
		width, height int
		color         bool
		want          []string
	}{
		{"wide", 100, 40, false, []string{
			"  fix-the-very-long-named… step 12    $0.1234 of $0.50  0:40",
			"  fourth                   cloning    $0.0000 of $0.50  0:39",
			"  fifth                    check      $0.0000 of $0.50  0:38",
			"1 done · 1 failed · 3 running · 5 queued · $1.5000 of $20.00",
		}},
		{"narrow", 30, 40, false, []string{
			"  fix-the… step 12    $0.123…",
			"  fourth   cloning    $0.000…",
			"  fifth    check      $0.000…",
			"1 done · 1 failed · 3 runnin…",
		}},
		{"short", 100, 4, false, []string{
			"  fix-the-very-long-named… step 12    $0.1234 of $0.50  0:40",
			"  … and 2 more running",
			"1 done · 1 failed · 3 running · 5 queued · $1.5000 of $20.00",
		}},
		{"colour", 100, 40, true, []string{
			"  fix-the-very-long-named… \x1b[36mstep 12\x1b[0m    $0.1234 of $0.50  0:40",
			"  fourth                   \x1b[36mcloning\x1b[0m    $0.0000 of $0.50  0:39",
			"  fifth                    \x1b[36mcheck\x1b[0m      $0.0000 of $0.50  0:38",
			"\x1b[32m1 done\x1b[0m · \x1b[31m1 failed\x1b[0m · 3 running · 5 queued · $1.5000 of $20.00",
		}},
		{"colour, narrow: cut lines lose their colour", 30, 40, true, []string{
			"  fix-the… step 12    $0.123…",
			"  fourth   cloning    $0.000…",
			"  fifth    check      $0.000…",
			"1 done · 1 failed · 3 runnin…",
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := board().Lines(now, tt.width, tt.height, tt.color)
			if strings.Join(got, "\n") != strings.Join(tt.want, "\n") {
				t.Errorf("got\n%q\nwant\n%q", got, tt.want)
			}
			for _, l := range got {
				if n := utf8.RuneCountInString(stripColor(l)); n >= tt.width {
					t.Errorf("a line of %d columns on a terminal %d wide: %q", n, tt.width, l)
				}
			}
		})
	}
}

// An ETA appears once three tasks have finished: the time so far per
// finished task, times the tasks left.
func TestBoardETA(t *testing.T) {
	b := NewBoard(5, 0, t0)
	for _, id := range []string{"a", "b", "c"} {
		b.Start(id, 0, t0)
		if got := b.Lines(t0.Add(time.Minute), 100, 40, false); strings.Contains(got[len(got)-1], "ETA") {
			t.Errorf("an ETA before three tasks finished: %q", got)
		}
		b.Finish(id, true, 0)
	}
	b.Skip()
	got := b.Lines(t0.Add(3*time.Minute), 100, 40, false)
	if want := "3 done · 0 failed · 0 running · 1 queued · 1 skipped · $0.0000 · ETA 1:00"; got[len(got)-1] != want {
		t.Errorf("totals = %q, want %q", got[len(got)-1], want)
	}
}

// Frames drawn in place leave on screen the lines printed above and the
// last frame only, with no control but the screen's own.
func TestScreen(t *testing.T) {
	var out bytes.Buffer
	s := NewScreen(&out)
	s.Draw(nil, []string{"  a   step 1", "  b   cloning", "1 done"})
	s.Draw([]string{"+ c: succeeded"}, []string{"  a   step 2", "2 done"})
	s.Draw(nil, []string{"  a   step 2", "2 done"}) // unchanged: nothing written
	n := out.Len()
	s.Draw(nil, []string{"  a   step 2", "2 done"})
	if out.Len() != n {
		t.Errorf("an unchanged frame was written again")
	}
	s.Draw([]string{"+ a: succeeded", "+ b: succeeded"}, []string{"3 done"})
	screen := ptytest.Render(out.String(), 40)
	if len(screen.Errors) > 0 {
		t.Errorf("controls: %v", screen.Errors)
	}
	want := []string{"+ c: succeeded", "+ a: succeeded", "+ b: succeeded", "3 done"}
	if got := screen.Lines(); strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Errorf("screen:\n%s\nwant\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
	s.Clear()
	if got := ptytest.Render(out.String(), 40).Lines(); strings.Join(got, "\n") != strings.Join(want[:3], "\n") {
		t.Errorf("after Clear:\n%s", strings.Join(got, "\n"))
	}
	for _, c := range []string{"\x1b[2J", "\x1b[H", "\x1b[s", "\x1b[u", "\x1b[?"} {
		if strings.Contains(out.String(), c) {
			t.Errorf("the screen uses %q", c)
		}
	}
}

// A terminal prints lines above the board and draws it until stopped,
// then leaves only the printed lines.
func TestTerminal(t *testing.T) {
	var out bytes.Buffer
	b := NewBoard(2, 0, t0)
	term := NewTerminal(&out, b, func() (int, int) { return 60, 20 }, false)
	term.now = func() time.Time { return t0.Add(5 * time.Second) }
	b.Start("a", 0, t0)
	term.Redraw()
	b.Phase("a", "step", 1)
	term.Redraw()
	b.Finish("a", true, 0.1)
	term.Print("+ a: succeeded")
	term.Stop()
	screen := ptytest.Render(out.String(), 60)
	if len(screen.Errors) > 0 {
		t.Errorf("controls: %v", screen.Errors)
	}
	if got := screen.Lines(); len(got) != 1 || got[0] != "+ a: succeeded" {
		t.Errorf("screen after Stop: %q", got)
	}
	if !strings.Contains(out.String(), "step 1") {
		t.Errorf("the board never showed the step: %q", out.String())
	}
}
