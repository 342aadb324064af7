package channel

import (
	"fmt"
	"io"
	"os"
)

// Subcommand is the hidden argument that makes a binary carrying the
// helper (runner itself, or a test binary) serve a channel instead of its
// usual work: `runner sandbox-channel`.
const Subcommand = "sandbox-channel"

// Main is the helper's command line: it serves a channel on stdin and
// stdout, and returns the exit code. Errors go to stderr, which the host
// keeps for its diagnosis.
func Main(stdin io.Reader, stdout, stderr io.Writer) int {
	if err := Serve(stdin, stdout); err != nil {
		fmt.Fprintf(stderr, "%s: %v\n", Subcommand, err)
		return 1
	}
	return 0
}

// IsHelper reports whether this process was started as the helper.
func IsHelper() bool { return len(os.Args) > 1 && os.Args[1] == Subcommand }
