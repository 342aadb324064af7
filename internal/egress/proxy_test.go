package egress

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"net/url"
	"strings"
	"sync"
	"testing"
)

// fakeDNS answers from a table; every lookup is counted.
type fakeDNS struct {
	mu      sync.Mutex
	answers map[string][][]netip.Addr // successive answers per name
	lookups map[string]int
}

func (f *fakeDNS) LookupNetIP(_ context.Context, _, host string) ([]netip.Addr, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.lookups == nil {
		f.lookups = map[string]int{}
	}
	n := f.lookups[host]
	f.lookups[host]++
	a, ok := f.answers[host]
	if !ok {
		return nil, &net.DNSError{Err: "no such host", Name: host, IsNotFound: true}
	}
	return a[min(n, len(a)-1)], nil
}

func addrs(s ...string) []netip.Addr {
	var out []netip.Addr
	for _, a := range s {
		out = append(out, netip.MustParseAddr(a))
	}
	return out
}

// harness is a proxy whose "public" addresses lead to local test servers:
// the dialler maps them, and records every address it was asked for.
type harness struct {
	proxy  *Proxy
	url    string
	mu     sync.Mutex
	events []Event
	dialed []string
}

func newHarness(t *testing.T, allow []string, dns *fakeDNS, routes map[string]string) *harness {
	t.Helper()
	a, err := ParseAllowlist(allow)
	if err != nil {
		t.Fatal(err)
	}
	h := &harness{}
	h.proxy = &Proxy{Allow: a, Resolver: dns,
		Report: func(ev Event) { h.mu.Lock(); h.events = append(h.events, ev); h.mu.Unlock() },
		Dial: func(ctx context.Context, network, addr string) (net.Conn, error) {
			h.mu.Lock()
			h.dialed = append(h.dialed, addr)
			h.mu.Unlock()
			to, ok := routes[addr]
			if !ok {
				return nil, fmt.Errorf("dial %s: no route to host", addr)
			}
			var d net.Dialer
			return d.DialContext(ctx, network, to)
		}}
	srv := httptest.NewServer(h.proxy)
	t.Cleanup(srv.Close)
	h.url = srv.URL
	return h
}

func (h *harness) lastEvent(t *testing.T) Event {
	t.Helper()
	h.mu.Lock()
	defer h.mu.Unlock()
	if len(h.events) == 0 {
		t.Fatal("no event reported")
	}
	return h.events[len(h.events)-1]
}

// connect sends a raw CONNECT line and returns the status line and the
// connection.
func (h *harness) connect(t *testing.T, target string) (string, net.Conn, *bufio.Reader) {
	t.Helper()
	c, err := net.Dial("tcp", strings.TrimPrefix(h.url, "http://"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	fmt.Fprintf(c, "CONNECT %s HTTP/1.1\r\nHost: %s\r\n\r\n", target, target)
	br := bufio.NewReader(c)
	res, err := http.ReadResponse(br, &http.Request{Method: http.MethodConnect})
	if err != nil {
		t.Fatal(err)
	}
	if res.StatusCode != http.StatusOK {
		body, _ := io.ReadAll(res.Body)
		return fmt.Sprintf("%d %s", res.StatusCode, body), c, br
	}
	return "200", c, br
}

func echoServer(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ln.Close() })
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			go func() { io.Copy(c, c); c.Close() }()
		}
	}()
	return ln.Addr().String()
}

func TestConnectAllowedTunnelsAndCounts(t *testing.T) {
	echo := echoServer(t)
	dns := &fakeDNS{answers: map[string][][]netip.Addr{"a.pkg.example.test.": {addrs("198.51.100.7")}}}
	h := newHarness(t, []string{"*.pkg.example.test:443"}, dns, map[string]string{"198.51.100.7:443": echo})
	status, c, br := h.connect(t, "A.Pkg.Example.Test:443")
	if status != "200" {
		t.Fatalf("CONNECT: %s", status)
	}
	io.WriteString(c, "hello")
	c.(*net.TCPConn).CloseWrite()
	got, _ := io.ReadAll(br)
	if string(got) != "hello" {
		t.Fatalf("echo through the tunnel = %q, want hello", got)
	}
	c.Close()
	ev := waitEvent(t, h, Allowed)
	want := Event{Method: "CONNECT", Host: "a.pkg.example.test", Port: 443, Addr: "198.51.100.7", Decision: Allowed, BytesUp: 5, BytesDown: 5}
	ev.Time = want.Time
	if ev != want {
		t.Errorf("event = %+v\nwant    %+v", ev, want)
	}
}

// waitEvent waits until the proxy has reported an event with decision
// (an allowed tunnel is reported when it closes).
func waitEvent(t *testing.T, h *harness, decision string) Event {
	t.Helper()
	for {
		h.mu.Lock()
		for _, ev := range h.events {
			if ev.Decision == decision {
				h.mu.Unlock()
				return ev
			}
		}
		h.mu.Unlock()
		if t.Context().Err() != nil {
			t.Fatal("no event")
		}
		runtimeGosched()
	}
}

func TestConnectRefusals(t *testing.T) {
	echo := echoServer(t)
	dns := &fakeDNS{answers: map[string][][]netip.Addr{
		"ok.example.test.":       {addrs("198.51.100.7")},
		"private.example.test.":  {addrs("10.1.2.3")},
		"mixed.example.test.":    {addrs("198.51.100.7", "127.0.0.1")},
		"metadata.example.test.": {addrs("169.254.169.254")},
		"mapped.example.test.":   {addrs("::ffff:192.168.0.1")},
		"v6local.example.test.":  {addrs("fd00::1")},
	}}
	routes := map[string]string{"198.51.100.7:443": echo, "127.0.0.1:443": echo, "10.1.2.3:443": echo}
	h := newHarness(t, []string{"ok.example.test:443", "private.example.test:443", "mixed.example.test:443",
		"metadata.example.test:443", "mapped.example.test:443", "v6local.example.test:443", "missing.example.test:443"}, dns, routes)
	tests := []struct{ target, reason string }{
		{"evil.example.test:443", "not in the allowlist"},
		{"ok.example.test:22", "port 22 is not allowed"},
		{"ok.example.test", "want host:port"},
		{"127.0.0.1:443", "IP addresses"},
		{"198.51.100.7:443", "IP addresses"},
		{"[::1]:443", "IP addresses"},
		{"2130706433:443", "IP addresses"},
		{"0x7f.1:443", "IP addresses"},
		{"user:pw@ok.example.test:443", "user names"},
		{"ok.example.test:0443", "port"},
		{"private.example.test:443", "10.1.2.3: private"},
		{"mixed.example.test:443", "127.0.0.1: loopback"},
		{"metadata.example.test:443", "metadata"},
		{"mapped.example.test:443", "192.168.0.1: private"},
		{"v6local.example.test:443", "fd00::1: private"},
		{"missing.example.test:443", "no such host"},
	}
	for _, tt := range tests {
		status, _, _ := h.connect(t, tt.target)
		if tt.reason == "user names" && strings.HasPrefix(status, "400") {
			continue // net/http refuses it before the proxy sees it
		}
		if !strings.HasPrefix(status, "403") || !strings.Contains(status, tt.reason) {
			t.Errorf("CONNECT %s: %q, want 403 with %q", tt.target, status, tt.reason)
			continue
		}
		if ev := h.lastEvent(t); ev.Decision != Refused || !strings.Contains(ev.Reason, tt.reason) {
			t.Errorf("CONNECT %s: event %+v, want refused with %q", tt.target, ev, tt.reason)
		}
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	if len(h.dialed) != 0 {
		t.Errorf("the proxy dialled %v for refused requests", h.dialed)
	}
}

// A name is resolved once per connection, and the address of that answer
// is the one dialled: a second, different answer cannot redirect it.
func TestResolvedOnceNoRebinding(t *testing.T) {
	echo := echoServer(t)
	dns := &fakeDNS{answers: map[string][][]netip.Addr{"flip.example.test.": {addrs("198.51.100.7"), addrs("127.0.0.1")}}}
	h := newHarness(t, []string{"flip.example.test:443"}, dns, map[string]string{"198.51.100.7:443": echo})
	status, c, _ := h.connect(t, "flip.example.test:443")
	if status != "200" {
		t.Fatalf("CONNECT: %s", status)
	}
	c.Close()
	waitEvent(t, h, Allowed)
	h.mu.Lock()
	defer h.mu.Unlock()
	if dns.lookups["flip.example.test."] != 1 || len(h.dialed) != 1 || h.dialed[0] != "198.51.100.7:443" {
		t.Errorf("lookups %v, dialled %v; want one lookup and 198.51.100.7:443", dns.lookups, h.dialed)
	}
}

func TestResolvePrefersIPv4AndRefusesMixed(t *testing.T) {
	dns := &fakeDNS{answers: map[string][][]netip.Addr{
		"both.":  {addrs("2606:4700::1111", "198.51.100.9")},
		"mixed.": {addrs("2606:4700::1111", "fe80::1")},
		"empty.": {nil},
	}}
	if a, err := Resolve(t.Context(), dns, "both."); err != nil || a.String() != "198.51.100.9" {
		t.Errorf("Resolve(both) = %v, %v; want 198.51.100.9", a, err)
	}
	if _, err := Resolve(t.Context(), dns, "mixed."); err == nil || !strings.Contains(err.Error(), "link-local") {
		t.Errorf("Resolve(mixed) = %v, want a link-local refusal", err)
	}
	if _, err := Resolve(t.Context(), dns, "empty."); err != ErrNoAddress {
		t.Errorf("Resolve(empty) = %v, want ErrNoAddress", err)
	}
}

func TestForwardPlainHTTP(t *testing.T) {
	var gotHost, gotAuth, gotPath string
	upstream := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		gotHost, gotAuth, gotPath = r.Host, r.Header.Get("Proxy-Authorization"), r.URL.Path
		body, _ := io.ReadAll(r.Body)
		fmt.Fprintf(w, "got %d bytes", len(body))
	}))
	t.Cleanup(upstream.Close)
	dns := &fakeDNS{answers: map[string][][]netip.Addr{"files.example.test.": {addrs("198.51.100.7")}}}
	h := newHarness(t, []string{"files.example.test"}, dns, map[string]string{"198.51.100.7:80": strings.TrimPrefix(upstream.URL, "http://")})
	pu, _ := url.Parse(h.url)
	client := &http.Client{Transport: &http.Transport{Proxy: http.ProxyURL(pu)}}

	req, _ := http.NewRequestWithContext(t.Context(), "POST", "http://files.example.test/x", strings.NewReader("12345678"))
	req.Header.Set("Proxy-Authorization", "Basic c2VjcmV0")
	res, err := client.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(res.Body)
	res.Body.Close()
	if res.StatusCode != 200 || string(body) != "got 8 bytes" {
		t.Fatalf("forwarded POST = %d %q", res.StatusCode, body)
	}
	if gotHost != "files.example.test" || gotAuth != "" || gotPath != "/x" {
		t.Errorf("upstream saw Host %q, Proxy-Authorization %q, path %q", gotHost, gotAuth, gotPath)
	}
	ev := h.lastEvent(t)
	if ev.Decision != Allowed || ev.Method != "POST" || ev.BytesUp != 8 || ev.BytesDown != int64(len("got 8 bytes")) || ev.Addr != "198.51.100.7" {
		t.Errorf("event %+v", ev)
	}

	// A Host header naming another server does not pick it.
	c, err := net.Dial("tcp", pu.Host)
	if err != nil {
		t.Fatal(err)
	}
	fmt.Fprintf(c, "GET http://files.example.test/y HTTP/1.1\r\nHost: evil.example.test\r\nConnection: close\r\n\r\n")
	io.ReadAll(c)
	c.Close()
	if gotHost != "files.example.test" || gotPath != "/y" {
		t.Errorf("with a Host header of another server, upstream saw Host %q, path %q", gotHost, gotPath)
	}

	for _, u := range []string{"http://evil.example.test/", "http://127.0.0.1/", "http://files.example.test:8080/"} {
		res, err := client.Get(u)
		if err != nil {
			t.Fatal(err)
		}
		res.Body.Close()
		if res.StatusCode != http.StatusForbidden {
			t.Errorf("GET %s through the proxy: %d, want 403", u, res.StatusCode)
		}
	}
	// User names in a request line (a client library would move them to
	// a header; a raw request need not).
	c, err = net.Dial("tcp", pu.Host)
	if err != nil {
		t.Fatal(err)
	}
	fmt.Fprintf(c, "GET http://user:pw@files.example.test/ HTTP/1.1\r\nHost: files.example.test\r\nConnection: close\r\n\r\n")
	raw, _ := io.ReadAll(c)
	c.Close()
	if !strings.HasPrefix(string(raw), "HTTP/1.1 403") || !strings.Contains(string(raw), "user names") {
		t.Errorf("user names in the request line: %q, want 403", raw)
	}
	// A request for the proxy itself, not a proxy request.
	res, err = http.Get(h.url + "/")
	if err != nil {
		t.Fatal(err)
	}
	res.Body.Close()
	if res.StatusCode != http.StatusBadRequest {
		t.Errorf("GET / on the proxy: %d, want 400", res.StatusCode)
	}
}

// A client that sends its tunnel's first bytes with the CONNECT and
// half-closes (nc with a file on stdin) still gets its tunnel.
func TestConnectClientHalfClosesEarly(t *testing.T) {
	echo := echoServer(t)
	dns := &fakeDNS{answers: map[string][][]netip.Addr{"ok.example.test.": {addrs("198.51.100.7")}}}
	h := newHarness(t, []string{"ok.example.test:443"}, dns, map[string]string{"198.51.100.7:443": echo})
	c, err := net.Dial("tcp", strings.TrimPrefix(h.url, "http://"))
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	io.WriteString(c, "CONNECT ok.example.test:443 HTTP/1.1\r\nHost: ok.example.test:443\r\n\r\nping")
	c.(*net.TCPConn).CloseWrite()
	got, _ := io.ReadAll(c)
	if !strings.HasPrefix(string(got), "HTTP/1.1 200") || !strings.HasSuffix(string(got), "\r\n\r\nping") {
		t.Fatalf("reply = %q, want 200 then the echo of ping", got)
	}
}
