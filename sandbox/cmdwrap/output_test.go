package cmdwrap

import (
	"testing"

	"github.com/runner-dev/runner/sandbox"
)

// The wrapper's exit mark ends the command for a reader whose stream stays
// open: Exited closes, the code is kept, and the mark is not output.
func TestOutputExitMark(t *testing.T) {
	o := NewOutput(1<<10, "m1")
	o.Stdout().Write([]byte("out\n"))
	select {
	case <-o.Exited():
		t.Fatal("Exited closed before the mark")
	default:
	}
	o.Stderr().Write([]byte("err\nm1:exit:42\n"))
	select {
	case <-o.Exited():
	default:
		t.Fatal("Exited not closed after the mark")
	}
	o.Stderr().Write([]byte("m1:exit:7\n")) // a second mark changes nothing
	var res sandbox.ExecResult
	o.Fill(&res)
	if o.ExitCode != 42 || res.Stderr != "err\n" || res.Output != "out\nerr\n" {
		t.Errorf("code %d, stderr %q, output %q; want 42, %q, %q", o.ExitCode, res.Stderr, res.Output, "err\n", "out\nerr\n")
	}
}
