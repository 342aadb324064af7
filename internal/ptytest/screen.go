package ptytest

import (
	"fmt"
	"strconv"
	"strings"
	"unicode/utf8"
)

// Screen is the smallest terminal that shows what a program drew: it
// knows printable text, CR, LF, and the controls CUU (ESC [ n A), EL
// (ESC [ K), ED (ESC [ J) and SGR (ESC [ ... m, colours, which it does not
// keep). Anything else is recorded in Errors, so that a test asserts the
// controls a program uses as well as what ends up on screen. Text wraps at
// Width as on a VT100: the cursor stays on the last column until the next
// character, and EL there erases that column. It has no height: nothing
// scrolls away.
type Screen struct {
	Width  int
	Errors []string
	rows   [][]rune
	row    int
	col    int
}

// Render plays the output of a program on a screen width columns wide.
func Render(output string, width int) *Screen {
	s := &Screen{Width: width}
	s.play(output)
	return s
}

func (s *Screen) errorf(format string, a ...any) {
	s.Errors = append(s.Errors, fmt.Sprintf("row %d col %d: ", s.row, s.col)+fmt.Sprintf(format, a...))
}

func (s *Screen) line() []rune {
	for len(s.rows) <= s.row {
		s.rows = append(s.rows, nil)
	}
	return s.rows[s.row]
}

func (s *Screen) play(out string) {
	for i := 0; i < len(out); {
		r, size := utf8.DecodeRuneInString(out[i:])
		switch {
		case r == '\r':
			s.col = 0
		case r == '\n':
			s.row++
			s.line()
		case r == 0x1b:
			n := s.control(out[i:])
			if n == 0 {
				s.errorf("unknown control %q", out[i:min(len(out), i+8)])
				n = 1
			}
			i += n
			continue
		case r < 0x20 || r == 0x7f || r >= 0x80 && r <= 0x9f || r == utf8.RuneError && size == 1:
			s.errorf("control character %U", r)
		default:
			if s.col >= s.Width {
				s.row, s.col = s.row+1, 0
			}
			l := s.line()
			for len(l) <= s.col {
				l = append(l, ' ')
			}
			l[s.col] = r
			s.rows[s.row] = l
			s.col++
		}
		i += size
	}
}

// control plays the CSI sequence at the start of out and returns its
// length, or 0 for one this screen does not know.
func (s *Screen) control(out string) int {
	if len(out) < 3 || out[1] != '[' {
		return 0
	}
	end := 2
	for end < len(out) && (out[end] >= '0' && out[end] <= '9' || out[end] == ';') {
		end++
	}
	if end == len(out) {
		return 0
	}
	params := out[2:end]
	switch out[end] {
	case 'm':
	case 'A':
		n := 1
		if params != "" {
			v, err := strconv.Atoi(params)
			if err != nil {
				return 0
			}
			n = v
		}
		s.row = max(s.row-n, 0)
	case 'K':
		if params != "" {
			return 0
		}
		l := s.line()
		if col := min(s.col, s.Width-1); col < len(l) {
			s.rows[s.row] = l[:col]
		}
	case 'J':
		if params != "" {
			return 0
		}
		l := s.line()
		if s.col < len(l) {
			s.rows[s.row] = l[:s.col]
		}
		s.rows = s.rows[:s.row+1]
	default:
		return 0
	}
	return end + 1
}

// Lines returns the screen's lines without their trailing spaces, the
// empty lines at the end left out.
func (s *Screen) Lines() []string {
	var out []string
	for _, r := range s.rows {
		out = append(out, strings.TrimRight(string(r), " "))
	}
	for len(out) > 0 && out[len(out)-1] == "" {
		out = out[:len(out)-1]
	}
	return out
}
