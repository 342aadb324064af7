package egress

import (
	"context"
	"errors"
	"fmt"
	"net/netip"
)

// blockedRanges are the addresses a name on the allowlist may not lead
// to: the host itself, the networks around it, and the cloud metadata
// services. Each entry names why, for the refusal event.
var blockedRanges = []struct {
	prefix netip.Prefix
	why    string
}{
	{netip.MustParsePrefix("0.0.0.0/8"), "unspecified (this network)"},
	{netip.MustParsePrefix("10.0.0.0/8"), "private"},
	{netip.MustParsePrefix("100.64.0.0/10"), "carrier-grade NAT (shared)"},
	{netip.MustParsePrefix("127.0.0.0/8"), "loopback"},
	{netip.MustParsePrefix("169.254.169.254/32"), "cloud metadata service"},
	{netip.MustParsePrefix("169.254.0.0/16"), "link-local"},
	{netip.MustParsePrefix("172.16.0.0/12"), "private"},
	{netip.MustParsePrefix("192.0.0.0/24"), "IETF protocol assignments"},
	{netip.MustParsePrefix("192.168.0.0/16"), "private"},
	{netip.MustParsePrefix("198.18.0.0/15"), "network benchmarking (often internal)"},
	{netip.MustParsePrefix("224.0.0.0/4"), "multicast"},
	{netip.MustParsePrefix("240.0.0.0/4"), "reserved"},
	{netip.MustParsePrefix("::/128"), "unspecified"},
	{netip.MustParsePrefix("::1/128"), "loopback"},
	{netip.MustParsePrefix("fd00:ec2::254/128"), "cloud metadata service"},
	{netip.MustParsePrefix("fc00::/7"), "private (unique local)"},
	{netip.MustParsePrefix("fe80::/10"), "link-local"},
	{netip.MustParsePrefix("fec0::/10"), "site-local"},
	{netip.MustParsePrefix("ff00::/8"), "multicast"},
	{netip.MustParsePrefix("100::/64"), "discard-only"},
}

// embeddedV4 are IPv6 ranges that carry an IPv4 address a gateway may
// forward to: the IPv4 address is checked too.
var embeddedV4 = []struct {
	prefix netip.Prefix
	offset int // byte offset of the IPv4 address
}{
	{netip.MustParsePrefix("64:ff9b::/96"), 12},   // NAT64
	{netip.MustParsePrefix("64:ff9b:1::/48"), 12}, // local-use NAT64
	{netip.MustParsePrefix("2002::/16"), 2},       // 6to4
	{netip.MustParsePrefix("::/96"), 12},          // IPv4-compatible (deprecated)
}

// Blocked returns why the proxy must not connect to a, or "" when a is an
// ordinary public address. An IPv4 address written in IPv6 (mapped,
// NAT64, 6to4) is judged by its IPv4 address.
func Blocked(a netip.Addr) string {
	if !a.IsValid() {
		return "invalid address"
	}
	a = a.Unmap()
	a = a.WithZone("")
	for _, e := range embeddedV4 {
		if a.Is6() && e.prefix.Contains(a) && a != netip.IPv6Unspecified() && a != netip.IPv6Loopback() {
			b := a.As16()
			v4 := netip.AddrFrom4([4]byte(b[e.offset : e.offset+4]))
			if why := Blocked(v4); why != "" {
				return why + " (" + v4.String() + " inside " + a.String() + ")"
			}
		}
	}
	for _, r := range blockedRanges {
		if r.prefix.Contains(a) {
			return r.why
		}
	}
	return ""
}

// Resolver looks up the addresses of a host name; *net.Resolver is one.
type Resolver interface {
	LookupNetIP(ctx context.Context, network, host string) ([]netip.Addr, error)
}

// ErrNoAddress is returned for a name with no address.
var ErrNoAddress = errors.New("the name has no address")

// Refusal is an address-level refusal: the name resolves somewhere the
// sandbox may not go.
type Refusal struct {
	Host string
	Addr netip.Addr
	Why  string
}

func (r *Refusal) Error() string {
	return fmt.Sprintf("%s resolves to %s: %s", r.Host, r.Addr, r.Why)
}

// Resolve looks host up once and returns the address to dial. When any
// of the answers is blocked, the name is refused as a whole (a *Refusal):
// a name that mixes public and internal addresses is either misconfigured
// or an attempt to get the proxy to pick an internal one. The caller dials
// the returned address, never the name again, so a second answer (DNS
// rebinding) cannot change where the connection goes. IPv4 is preferred.
func Resolve(ctx context.Context, r Resolver, host string) (netip.Addr, error) {
	addrs, err := r.LookupNetIP(ctx, "ip", host)
	if err != nil {
		return netip.Addr{}, err
	}
	if len(addrs) == 0 {
		return netip.Addr{}, ErrNoAddress
	}
	var pick netip.Addr
	for _, a := range addrs {
		if why := Blocked(a); why != "" {
			return netip.Addr{}, &Refusal{Host: host, Addr: a.Unmap(), Why: why}
		}
		a = a.Unmap()
		if !pick.IsValid() || a.Is4() && !pick.Is4() {
			pick = a
		}
	}
	return pick, nil
}
