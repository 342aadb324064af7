package egress

import (
	"context"
	"flag"
	"fmt"
	"io"
	"net"
	"net/netip"
	"os/signal"
	"strings"
	"syscall"
)

// Main is the proxy's command line (runner egress-proxy --listen ADDR
// [--listen-in CIDR] --allow RULE...): it serves until SIGTERM or SIGINT,
// writing its events to stdout (see Serve), and returns the exit code.
// With --listen-in, it listens only on its own address in that network,
// at the port of --listen: a proxy attached to several networks then
// serves only the sandbox's.
func Main(args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("egress-proxy", flag.ContinueOnError)
	fs.SetOutput(stderr)
	listen := fs.String("listen", ":3128", "address to listen on")
	listenIn := fs.String("listen-in", "", "listen only on this host's address within this network (CIDR)")
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
	addr := *listen
	if *listenIn != "" {
		a, err := addressIn(*listenIn, *listen)
		if err != nil {
			fmt.Fprintf(stderr, "egress-proxy: %v\n", err)
			return 2
		}
		addr = a
	}
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM, syscall.SIGINT)
	defer stop()
	if err := Serve(ctx, addr, allow, stdout); err != nil {
		fmt.Fprintln(stderr, err)
		return 1
	}
	return 0
}

// addressIn returns host:port for this host's address within cidr and the
// port of listen.
func addressIn(cidr, listen string) (string, error) {
	prefix, err := netip.ParsePrefix(cidr)
	if err != nil {
		return "", fmt.Errorf("--listen-in: %w", err)
	}
	_, port, err := net.SplitHostPort(listen)
	if err != nil {
		return "", fmt.Errorf("--listen: %w", err)
	}
	addrs, err := net.InterfaceAddrs()
	if err != nil {
		return "", err
	}
	for _, a := range addrs {
		if ipn, ok := a.(*net.IPNet); ok {
			if ip, ok := netip.AddrFromSlice(ipn.IP); ok && prefix.Contains(ip.Unmap()) {
				return net.JoinHostPort(ip.Unmap().String(), port), nil
			}
		}
	}
	return "", fmt.Errorf("no address of this host in %s", cidr)
}
