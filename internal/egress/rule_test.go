package egress

import (
	"net/netip"
	"strings"
	"testing"
)

func TestParseRuleAccepts(t *testing.T) {
	tests := []struct {
		in   string
		want Rule
	}{
		{"proxy.example.com:443", Rule{Host: "proxy.example.com", Port: 443}},
		{"*.pkg.example.org", Rule{Host: "pkg.example.org", Wildcard: true}},
		{"*.pkg.example.org:8443", Rule{Host: "pkg.example.org", Wildcard: true, Port: 8443}},
		{"Registry.NPMJS.org", Rule{Host: "registry.npmjs.org"}},
		{"example.com.", Rule{Host: "example.com"}},
		{"example.com.:80", Rule{Host: "example.com", Port: 80}},
		{"bücher.example", Rule{Host: "xn--bcher-kva.example"}},
		{"xn--bcher-kva.example", Rule{Host: "xn--bcher-kva.example"}},
		{"localhost", Rule{Host: "localhost"}}, // allowed as a name; its address is refused by the proxy
		{"1password.com", Rule{Host: "1password.com"}},
		{"a.0x1.example", Rule{Host: "a.0x1.example"}},
	}
	for _, tt := range tests {
		got, err := ParseRule(tt.in)
		if err != nil || got != tt.want {
			t.Errorf("ParseRule(%q) = %+v, %v; want %+v", tt.in, got, err, tt.want)
		}
	}
}

func TestParseRuleRefuses(t *testing.T) {
	tests := []struct{ in, wantErr string }{
		{"", "empty"},
		{" example.com", "spaces"},
		{"https://example.com", "not a URL"},
		{"example.com/path", "not a path"},
		{"user@example.com:443", "user names"},
		{"127.0.0.1", "IP addresses"},
		{"127.0.0.1:443", "IP addresses"},
		{"10.1", "IP addresses"},               // inet_aton: 10.0.0.1
		{"2130706433", "IP addresses"},         // decimal 127.0.0.1
		{"2130706433:80", "IP addresses"},      // decimal with a port
		{"0x7f.0.0.1", "IP addresses"},         // hex
		{"0177.0.0.1", "IP addresses"},         // octal
		{"127.0.0.1.", "IP addresses"},         // trailing dot
		{"0x7f000001", "IP addresses"},         // one hex number
		{"[::1]:443", "IP addresses"},          // IPv6 literal
		{"::1", "IP addresses"},                // bare IPv6
		{"[::ffff:127.0.0.1]", "IP addresses"}, // mapped
		{"１２７.０.０.１", "IP addresses"},          // full-width digits map to an IP
		{"example.com:0", "port"},
		{"example.com:65536", "port"},
		{"example.com:08", "port"},
		{"example.com:+80", "port"},
		{"example.com:", "port"},
		{"example.com:http", "port"},
		{"*", "wildcard"},
		{"*.", "empty host"},
		{"*.com", "two labels"},
		{"**.example.com", "wildcard"},
		{"a.*.example.com", "wildcard"},
		{"*example.com", "wildcard"},
		{"ex*.com", "wildcard"},
		{"example..com", "label"},
		{"-bad.example.com", "label"},
		{"exa mple.com", "spaces"},
		{"exa%2ample.com", "not"},
		{"example.com\x00.evil.org", "not"},
		{strings.Repeat("a", 64) + ".com", "label"},
		{strings.Repeat("a.", 127) + "com", "253"},
	}
	for _, tt := range tests {
		got, err := ParseRule(tt.in)
		if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
			t.Errorf("ParseRule(%q) = %+v, %v; want an error containing %q", tt.in, got, err, tt.wantErr)
		}
	}
}

func TestAllowlistAllows(t *testing.T) {
	a, err := ParseAllowlist([]string{"proxy.example.com:443", "*.pkg.example.org", "api.example.net"})
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		host string
		port int
		want bool
	}{
		{"proxy.example.com", 443, true},
		{"proxy.example.com", 80, false}, // only the port given
		{"proxy.example.com.evil.org", 443, false},
		{"evilproxy.example.com", 443, false},
		{"sub.proxy.example.com", 443, false}, // an exact name has no subdomains
		{"a.pkg.example.org", 443, true},
		{"a.pkg.example.org", 80, true}, // default ports
		{"a.pkg.example.org", 22, false},
		{"evil.com.pkg.example.org", 443, true}, // a subdomain, served by pkg.example.org's DNS
		{"a.b.c.pkg.example.org", 443, true},
		{"pkg.example.org", 443, false}, // a wildcard does not match its domain
		{"pkg.example.org.evil.com", 443, false},
		{"evilpkg.example.org", 443, false},
		{"xpkg.example.org", 443, false},
		{"api.example.net", 443, true},
		{"api.example.net", 8080, false},
	}
	for _, tt := range tests {
		if got, why := a.Allows(tt.host, tt.port); got != tt.want {
			t.Errorf("Allows(%q, %d) = %v (%s), want %v", tt.host, tt.port, got, why, tt.want)
		}
	}
	if _, why := a.Allows("proxy.example.com", 80); !strings.Contains(why, "port 80") {
		t.Errorf("refusal of a port: %q, want it to name the port", why)
	}
}

func TestCanonicalHostMatchesRules(t *testing.T) {
	a, _ := ParseAllowlist([]string{"*.pkg.example.org", "bücher.example:443"})
	for _, h := range []string{"A.PKG.Example.ORG", "a.pkg.example.org.", "xn--bcher-kva.example", "BÜCHER.example"} {
		c, err := CanonicalHost(h)
		if err != nil {
			t.Fatalf("CanonicalHost(%q): %v", h, err)
		}
		if ok, why := a.Allows(c, 443); !ok {
			t.Errorf("%q (canonical %q) refused: %s", h, c, why)
		}
	}
	for _, h := range []string{"a.pkg.example.org..", "a..pkg.example.org", "2130706433", "0x7f.1", "127.1", "[::1]"} {
		if c, err := CanonicalHost(h); err == nil {
			t.Errorf("CanonicalHost(%q) = %q, want an error", h, c)
		}
	}
}

func TestBlocked(t *testing.T) {
	tests := []struct {
		addr    string
		blocked bool
	}{
		{"127.0.0.1", true},
		{"127.255.0.9", true},
		{"10.0.0.1", true},
		{"172.17.0.2", true},
		{"192.168.1.1", true},
		{"169.254.169.254", true},
		{"169.254.1.1", true},
		{"100.64.0.1", true},
		{"100.127.255.254", true},
		{"0.0.0.0", true},
		{"224.0.0.1", true},
		{"255.255.255.255", true},
		{"::", true},
		{"::1", true},
		{"::ffff:127.0.0.1", true},
		{"::ffff:10.0.0.1", true},
		{"::127.0.0.1", true},
		{"64:ff9b::a9fe:a9fe", true}, // NAT64 of 169.254.169.254
		{"2002:a00:1::1", true},      // 6to4 of 10.0.0.1
		{"fd00:ec2::254", true},
		{"fd12:3456::1", true},
		{"fe80::1", true},
		{"fe80::1%eth0", true},
		{"ff02::1", true},
		{"93.184.215.14", false},
		{"198.51.100.7", false},
		{"100.128.0.1", false},
		{"2606:4700::1111", false},
		{"::ffff:93.184.215.14", false},
		{"64:ff9b::5db8:d70e", false}, // NAT64 of a public address
	}
	for _, tt := range tests {
		a := netip.MustParseAddr(tt.addr)
		if why := Blocked(a); (why != "") != tt.blocked {
			t.Errorf("Blocked(%s) = %q, want blocked=%v", tt.addr, why, tt.blocked)
		}
	}
}
