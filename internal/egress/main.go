package egress

import (
	"context"
	"flag"
	"fmt"
	"io"
	"os/signal"
	"strings"
	"syscall"
)

// Main is the proxy's command line (runner egress-proxy --listen ADDR
// --allow RULE...): it serves until SIGTERM or SIGINT, writing its events
// to stdout (see Serve), and returns the exit code.
func Main(args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("egress-proxy", flag.ContinueOnError)
	fs.SetOutput(stderr)
	listen := fs.String("listen", ":3128", "address to listen on")
	var rules []string
	fs.Func("allow", "a rule of the allowlist (repeat)", func(s string) error {
		rules = append(rules, s)
		return nil
	})
	if err := fs.Parse(args); err != nil {
		return 2
	}
	allow, err := ParseAllowlist(rules)
	if err != nil || len(rules) == 0 {
		fmt.Fprintf(stderr, "egress-proxy: allowlist %s: %v\n", strings.Join(rules, " "), err)
		return 2
	}
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM, syscall.SIGINT)
	defer stop()
	if err := Serve(ctx, *listen, allow, stdout); err != nil {
		fmt.Fprintln(stderr, err)
		return 1
	}
	return 0
}
