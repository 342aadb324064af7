// Package cmdwrap is the sandbox's command wrapper (exec.sh), which every
// backend runs inside the sandbox around an agent's command, and the
// capture of what it prints. The wrapper enforces the timeout inside the
// sandbox, killing every process of the command; Output keeps the head and
// the tail of each stream and reads the wrapper's marks (timed out, out of
// memory) out of stderr.
package cmdwrap

import (
	_ "embed"
	"strings"

	"github.com/runner-dev/runner/sandbox"
)

// Script is the wrapper, a POSIX sh script; see its header for its
// arguments. Run it as: sh -c Script runner-exec run MARK CMD, with
// RUNNER_EXEC=MARK in the environment and stdin held open until the
// timeout.
//
//go:embed exec.sh
var Script string

// markPrefix begins every mark.
const markPrefix = "runner-exec-"

// NewMark returns a fresh mark naming one command's processes.
func NewMark() string {
	return markPrefix + sandbox.RandomID() + sandbox.RandomID()
}

// ValidMark reports whether mark has NewMark's form: the prefix, then
// letters, digits and dashes only (the wrapper searches for it as a
// literal regular expression), and a bounded length.
func ValidMark(mark string) bool {
	rest, ok := strings.CutPrefix(mark, markPrefix)
	if !ok || len(rest) < 8 || len(rest) > 64 {
		return false
	}
	for _, r := range rest {
		if !(r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || r == '-') {
			return false
		}
	}
	return true
}
