package tasks

import (
	"fmt"
	"sort"
	"strings"
)

// Problem is one mistake in a task file.
type Problem struct {
	File string
	// Line and Col are 1-based; Col is 0 when unknown.
	Line, Col int
	// TaskID is the id of the task concerned, empty for the defaults, for
	// the file as a whole, or for a task without an id.
	TaskID string
	// Field is the key concerned, dotted for nested keys ("limits.memory"),
	// empty when the problem is not about one key.
	Field string
	Msg   string
}

// String formats p as `file:line:col: task "id": msg`.
func (p Problem) String() string {
	var b strings.Builder
	b.WriteString(p.File)
	if p.Line > 0 {
		fmt.Fprintf(&b, ":%d", p.Line)
		if p.Col > 0 {
			fmt.Fprintf(&b, ":%d", p.Col)
		}
	}
	b.WriteString(": ")
	if p.TaskID != "" {
		fmt.Fprintf(&b, "task %q: ", p.TaskID)
	}
	b.WriteString(p.Msg)
	return b.String()
}

// ValidationError lists every problem found in a task file, in file order.
type ValidationError struct {
	Problems []Problem
}

// Error prints one problem per line.
func (e *ValidationError) Error() string { return strings.Join(e.ErrorLines(), "\n") }

// ErrorLines returns the lines of Error, one problem each, for a printer
// that escapes each line on its own.
func (e *ValidationError) ErrorLines() []string {
	lines := make([]string, len(e.Problems))
	for i, p := range e.Problems {
		lines[i] = p.String()
	}
	return lines
}

// sortProblems orders problems by position, keeping the order of discovery
// for problems at the same place.
func sortProblems(ps []Problem) {
	sort.SliceStable(ps, func(i, j int) bool {
		if ps[i].Line != ps[j].Line {
			return ps[i].Line < ps[j].Line
		}
		return ps[i].Col < ps[j].Col
	})
}

// suggest returns the known key closest to an unknown one, or "" when none
// is close enough to be a likely typo.
func suggest(unknown string, known []string) string {
	best, bestDist := "", -1
	for _, k := range known {
		d := levenshtein(strings.ToLower(unknown), k)
		if bestDist < 0 || d < bestDist {
			best, bestDist = k, d
		}
	}
	limit := min(3, max(1, len([]rune(unknown))/2))
	if bestDist >= 0 && bestDist <= limit {
		return best
	}
	// "retries" for "check_retries", "budget" for "budget_usd".
	var match string
	for _, k := range known {
		for _, part := range strings.Split(k, "_") {
			if part == strings.ToLower(unknown) {
				if match != "" && match != k {
					return ""
				}
				match = k
			}
		}
	}
	return match
}

// levenshtein is the edit distance between a and b, counted in runes.
func levenshtein(a, b string) int {
	ra, rb := []rune(a), []rune(b)
	prev := make([]int, len(rb)+1)
	cur := make([]int, len(rb)+1)
	for j := range prev {
		prev[j] = j
	}
	for i := 1; i <= len(ra); i++ {
		cur[0] = i
		for j := 1; j <= len(rb); j++ {
			cost := 1
			if ra[i-1] == rb[j-1] {
				cost = 0
			}
			cur[j] = min(prev[j]+1, cur[j-1]+1, prev[j-1]+cost)
		}
		prev, cur = cur, prev
	}
	return prev[len(rb)]
}
