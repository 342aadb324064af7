// Package egressprobe is the probe a sandbox runs at its start to prove
// that it has no way out: it tries a TCP connection to each address it is
// given and says, one line per address, whether it got through. It runs
// inside the sandbox as a subcommand of runner's own static helper
// (`runner egress-probe ADDR...`), so the image needs no tool of its own.
package egressprobe

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"strings"
	"time"
)

// Subcommand is the helper's argument that runs Main.
const Subcommand = "egress-probe"

// Timeout bounds each connection attempt: one still pending then counts
// as unreachable (a policy that drops packets looks like that).
const Timeout = 2 * time.Second

// Line answers for one address: "ADDR reachable" or "ADDR unreachable: WHY".
const (
	Reachable   = "reachable"
	Unreachable = "unreachable"
)

// Main probes every address of args (host:port) at once and prints one
// line per address, in the order given, on stdout. It exits 0 whatever it
// found; 2 on a bad argument.
func Main(args []string) int {
	return run(args, os.Stdout, os.Stderr)
}

func run(args []string, stdout, stderr io.Writer) int {
	if len(args) == 0 {
		fmt.Fprintln(stderr, "usage: egress-probe HOST:PORT...")
		return 2
	}
	for _, a := range args {
		if _, _, err := net.SplitHostPort(a); err != nil {
			fmt.Fprintf(stderr, "egress-probe: %q: want HOST:PORT\n", a)
			return 2
		}
	}
	lines := make([]string, len(args))
	done := make(chan struct{}, len(args))
	for i, a := range args {
		go func() {
			defer func() { done <- struct{}{} }()
			lines[i] = a + " " + Probe(a)
		}()
	}
	for range args {
		<-done
	}
	fmt.Fprintln(stdout, strings.Join(lines, "\n"))
	return 0
}

// Probe tries addr and returns Reachable or "unreachable: WHY".
func Probe(addr string) string {
	ctx, cancel := context.WithTimeout(context.Background(), Timeout)
	defer cancel()
	var d net.Dialer
	c, err := d.DialContext(ctx, "tcp", addr)
	if err == nil {
		c.Close()
		return Reachable
	}
	why := err.Error()
	if errors.Is(err, context.DeadlineExceeded) {
		why = "no answer within " + Timeout.String()
	}
	return Unreachable + ": " + why
}

// Parse reads Main's output: the addresses that were reachable, and an
// error when the output is not an answer for each of want.
func Parse(out string, want []string) (reached []string, err error) {
	got := map[string]string{}
	for _, line := range strings.Split(strings.TrimSpace(out), "\n") {
		addr, verdict, _ := strings.Cut(line, " ")
		got[addr] = verdict
	}
	for _, a := range want {
		v, ok := got[a]
		switch {
		case !ok:
			return nil, fmt.Errorf("the probe gave no answer for %s: %q", a, out)
		case v == Reachable:
			reached = append(reached, a)
		case !strings.HasPrefix(v, Unreachable):
			return nil, fmt.Errorf("the probe's answer for %s is not understood: %q", a, v)
		}
	}
	return reached, nil
}
