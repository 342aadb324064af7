// Package egress is the egress allowlist of a sandbox: the rules a task
// writes (host names and ports), the check of the addresses a name
// resolves to, and an HTTP forward and CONNECT proxy that lets through only
// what the rules allow and reports every decision as an Event. It knows
// nothing of containers: a backend runs the proxy where the sandbox can
// reach it and nothing else (see package dockernet).
package egress

import (
	"errors"
	"fmt"
	"net/netip"
	"strconv"
	"strings"

	"golang.org/x/net/idna"
)

// Rule is one entry of an allowlist: a host name, or every name under a
// domain ("*.pkg.example.org"), and a port or the default web ports.
type Rule struct {
	// Host is the name in lower-case ASCII (an IDN in punycode), without
	// a trailing dot; for a wildcard, the domain after "*.".
	Host string
	// Wildcard rules match every name strictly under Host, at any depth,
	// but not Host itself.
	Wildcard bool
	// Port is the one port allowed; 0 allows DefaultPorts.
	Port int
}

// DefaultPorts are the ports a rule without a port allows.
var DefaultPorts = []int{80, 443}

// String is the rule as a task would write it.
func (r Rule) String() string {
	s := r.Host
	if r.Wildcard {
		s = "*." + s
	}
	if r.Port != 0 {
		s += ":" + strconv.Itoa(r.Port)
	}
	return s
}

// ParseRule reads "host", "host:port", "*.domain" or "*.domain:port".
// IP addresses (in any spelling the C library accepts, such as
// "2130706433" or "0x7f.1"), URLs, user names, paths and wildcards
// anywhere but in front are refused: a rule names hosts, and the proxy
// resolves them itself.
func ParseRule(s string) (Rule, error) {
	var r Rule
	if s == "" {
		return r, errors.New("empty rule")
	}
	if strings.TrimSpace(s) != s || strings.ContainsAny(s, " \t\r\n") {
		return r, fmt.Errorf("%q: spaces are not allowed", s)
	}
	switch {
	case strings.Contains(s, "://"):
		return r, fmt.Errorf("%q: write a host name (and :port), not a URL", s)
	case strings.ContainsAny(s, "/?#"):
		return r, fmt.Errorf("%q: write a host name (and :port), not a path", s)
	case strings.Contains(s, "@"):
		return r, fmt.Errorf("%q: user names are not allowed", s)
	case strings.HasPrefix(s, "["):
		return r, fmt.Errorf("%q: IP addresses are not allowed, name the host", s)
	}
	host := s
	if i := strings.LastIndexByte(s, ':'); i >= 0 {
		if strings.Count(s, ":") > 1 {
			return r, fmt.Errorf("%q: IP addresses are not allowed, name the host", s)
		}
		p, err := ParsePort(s[i+1:])
		if err != nil {
			return r, fmt.Errorf("%q: %w", s, err)
		}
		host, r.Port = s[:i], p
	}
	if rest, ok := strings.CutPrefix(host, "*."); ok {
		r.Wildcard, host = true, rest
	}
	if strings.Contains(host, "*") {
		return r, fmt.Errorf("%q: a wildcard is allowed only as a whole first label, as in *.example.org", s)
	}
	h, err := CanonicalHost(host)
	if err != nil {
		return r, fmt.Errorf("%q: %w", s, err)
	}
	if r.Wildcard && !strings.Contains(h, ".") {
		return r, fmt.Errorf("%q: a wildcard must stand under a domain of at least two labels", s)
	}
	r.Host = h
	return r, nil
}

// ParsePort reads a decimal port 1-65535, without sign or leading zeros.
func ParsePort(s string) (int, error) {
	if s == "" || len(s) > 5 || s[0] == '0' || strings.Trim(s, "0123456789") != "" {
		return 0, fmt.Errorf("port %q: want a number from 1 to 65535", s)
	}
	p, _ := strconv.Atoi(s)
	if p > 65535 {
		return 0, fmt.Errorf("port %q: want a number from 1 to 65535", s)
	}
	return p, nil
}

// idnaProfile converts names the way a resolver lookup would, refusing
// what is not a valid host name.
var idnaProfile = idna.New(idna.MapForLookup(), idna.BidiRule(), idna.StrictDomainName(false), idna.Transitional(false))

// CanonicalHost returns a host name in the form rules are compared in:
// lower-case ASCII, international names in punycode, one trailing dot
// removed. It refuses IP addresses in every spelling, empty labels and
// characters a host name cannot hold.
func CanonicalHost(host string) (string, error) {
	host = strings.TrimSuffix(host, ".")
	if host == "" {
		return "", errors.New("empty host name")
	}
	if looksLikeIP(host) {
		return "", errors.New("IP addresses are not allowed, name the host")
	}
	a, err := idnaProfile.ToASCII(host)
	if err != nil {
		return "", fmt.Errorf("not a valid host name: %v", err)
	}
	a = strings.ToLower(a)
	if len(a) > 253 {
		return "", errors.New("host name longer than 253 characters")
	}
	for _, label := range strings.Split(a, ".") {
		if err := checkLabel(label); err != nil {
			return "", err
		}
	}
	// Mapping may have produced a numeric name (full-width digits).
	if looksLikeIP(a) {
		return "", errors.New("IP addresses are not allowed, name the host")
	}
	return a, nil
}

func checkLabel(l string) error {
	if l == "" || len(l) > 63 {
		return fmt.Errorf("label %q: want 1 to 63 characters", l)
	}
	if l[0] == '-' || l[len(l)-1] == '-' {
		return fmt.Errorf("label %q: a label cannot start or end with '-'", l)
	}
	for i := 0; i < len(l); i++ {
		c := l[i]
		if !(c >= 'a' && c <= 'z' || c >= '0' && c <= '9' || c == '-' || c == '_') {
			return fmt.Errorf("label %q: character %q is not allowed in a host name", l, c)
		}
	}
	return nil
}

// looksLikeIP reports whether host is an IP address or would be read as
// one by inet_aton (decimal, octal and hex parts, "127.1"): its last label
// is all digits or starts with 0x. No top-level domain is numeric.
func looksLikeIP(host string) bool {
	if _, err := netip.ParseAddr(strings.Trim(host, "[]")); err == nil || strings.Contains(host, ":") {
		return true
	}
	last := strings.ToLower(host[strings.LastIndexByte(host, '.')+1:])
	if last == "" {
		return false
	}
	if strings.HasPrefix(last, "0x") {
		return true
	}
	return strings.Trim(last, "0123456789") == ""
}

// Allowlist is the rules of one sandbox. The zero value allows nothing.
type Allowlist struct {
	rules []Rule
}

// ParseAllowlist parses every entry, reporting the first that is invalid
// with its index.
func ParseAllowlist(entries []string) (Allowlist, error) {
	var a Allowlist
	for i, e := range entries {
		r, err := ParseRule(e)
		if err != nil {
			return Allowlist{}, fmt.Errorf("entry %d: %w", i+1, err)
		}
		a.rules = append(a.rules, r)
	}
	return a, nil
}

// Rules returns the parsed rules.
func (a Allowlist) Rules() []Rule { return append([]Rule(nil), a.rules...) }

// Allows reports whether host (already canonical, see CanonicalHost) and
// port match a rule; if not, why says so.
func (a Allowlist) Allows(host string, port int) (ok bool, why string) {
	nameMatched := false
	for _, r := range a.rules {
		if !r.matchesHost(host) {
			continue
		}
		nameMatched = true
		if r.allowsPort(port) {
			return true, ""
		}
	}
	if nameMatched {
		return false, fmt.Sprintf("port %d is not allowed for %s", port, host)
	}
	return false, "host not in the allowlist"
}

func (r Rule) matchesHost(host string) bool {
	if !r.Wildcard {
		return host == r.Host
	}
	return strings.HasSuffix(host, "."+r.Host) && len(host) > len(r.Host)+1
}

func (r Rule) allowsPort(port int) bool {
	if r.Port != 0 {
		return port == r.Port
	}
	for _, p := range DefaultPorts {
		if p == port {
			return true
		}
	}
	return false
}
