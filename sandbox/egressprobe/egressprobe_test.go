package egressprobe

import (
	"bytes"
	"net"
	"strings"
	"testing"
)

// A listening address is reachable, a closed one is not, and Parse reads
// the verdicts back.
func TestProbe(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	closed, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	closedAddr := closed.Addr().String()
	closed.Close()
	addrs := []string{ln.Addr().String(), closedAddr}
	var out, errOut bytes.Buffer
	if code := run(addrs, &out, &errOut); code != 0 {
		t.Fatalf("exit %d: %s", code, errOut.String())
	}
	reached, err := Parse(out.String(), addrs)
	if err != nil {
		t.Fatal(err)
	}
	if len(reached) != 1 || reached[0] != ln.Addr().String() {
		t.Errorf("reached %v, want only %s; output:\n%s", reached, ln.Addr(), out.String())
	}
	if !strings.Contains(out.String(), closedAddr+" unreachable: ") {
		t.Errorf("output %q: want %s unreachable with a reason", out.String(), closedAddr)
	}
	if code := run([]string{"nohost"}, &out, &errOut); code != 2 {
		t.Errorf("bad address: exit %d, want 2", code)
	}
	if _, err := Parse("", addrs); err == nil {
		t.Error("Parse of an empty answer: nil error")
	}
}
