package egress

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httputil"
	"net/netip"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"
)

// Proxy is an HTTP forward proxy (plain-HTTP requests in absolute form)
// and CONNECT tunnel that lets through only what Allow allows, to
// addresses Blocked does not refuse. It is an http.Handler.
type Proxy struct {
	Allow Allowlist
	// Resolver looks names up; nil means net.DefaultResolver.
	Resolver Resolver
	// Dial connects to an address the proxy resolved; nil means a
	// net.Dialer with DialTimeout.
	Dial func(ctx context.Context, network, addr string) (net.Conn, error)
	// Report receives every decision; it must be safe for concurrent use.
	Report func(Event)
	// Now is the clock of the events; nil means time.Now.
	Now func() time.Time
}

// DialTimeout bounds the resolution and the connection to an upstream.
const DialTimeout = 30 * time.Second

// ServeHTTP implements http.Handler.
func (p *Proxy) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if r.Method == http.MethodConnect {
		p.connect(w, r)
		return
	}
	p.forward(w, r)
}

// target is where a request wants to go, once it passed the checks.
type target struct {
	host string
	port int
	addr netip.AddrPort
}

// check reads authority ("host:port", or "host" with defPort), applies the
// allowlist and resolves the name. On refusal it returns the event to
// report, with the reason.
func (p *Proxy) check(ctx context.Context, method, authority string, defPort int) (target, *Event) {
	ev := &Event{Method: method, Host: authority, Decision: Refused}
	if strings.Contains(authority, "@") {
		ev.Reason = "user names in the address are not allowed"
		return target{}, ev
	}
	host, portStr, err := net.SplitHostPort(authority)
	if err != nil {
		if defPort == 0 || strings.Contains(authority, "]") || strings.Count(authority, ":") > 0 {
			ev.Reason = "want host:port"
			return target{}, ev
		}
		host, portStr = authority, strconv.Itoa(defPort)
	}
	ev.Host = host
	port, err := ParsePort(portStr)
	if err != nil {
		ev.Reason = err.Error()
		return target{}, ev
	}
	ev.Port = port
	canon, err := CanonicalHost(host)
	if err != nil {
		ev.Reason = err.Error()
		return target{}, ev
	}
	ev.Host = canon
	if ok, why := p.Allow.Allows(canon, port); !ok {
		ev.Reason = why
		return target{}, ev
	}
	rctx, cancel := context.WithTimeout(ctx, DialTimeout)
	defer cancel()
	res := p.Resolver
	if res == nil {
		res = net.DefaultResolver
	}
	// The trailing dot keeps the resolver from trying search domains.
	addr, err := Resolve(rctx, res, canon+".")
	if err != nil {
		var ref *Refusal
		if errors.As(err, &ref) {
			ev.Addr = ref.Addr.String()
			ev.Reason = fmt.Sprintf("resolves to %s: %s", ref.Addr, ref.Why)
		} else {
			ev.Reason = "cannot resolve: " + lookupError(err)
		}
		return target{}, ev
	}
	return target{host: canon, port: port, addr: netip.AddrPortFrom(addr, uint16(port))}, nil
}

func lookupError(err error) string {
	var dnsErr *net.DNSError
	if errors.As(err, &dnsErr) {
		if dnsErr.IsNotFound {
			return "no such host"
		}
		if dnsErr.IsTimeout {
			return "lookup timed out"
		}
		return "lookup failed: " + dnsErr.Err
	}
	return err.Error()
}

func (p *Proxy) report(ev Event) {
	if p.Now != nil {
		ev.Time = p.Now().UTC()
	} else {
		ev.Time = time.Now().UTC()
	}
	if p.Report != nil {
		p.Report(ev)
	}
}

func (p *Proxy) refuse(w http.ResponseWriter, ev *Event) {
	p.report(*ev)
	w.Header().Set("Content-Type", "text/plain; charset=utf-8")
	w.Header().Set("Connection", "close")
	w.WriteHeader(http.StatusForbidden)
	fmt.Fprintf(w, "runner egress proxy: %s refused: %s\n", net.JoinHostPort(ev.Host, strconv.Itoa(ev.Port)), ev.Reason)
}

func (p *Proxy) dial(ctx context.Context, addr netip.AddrPort) (net.Conn, error) {
	ctx, cancel := context.WithTimeout(ctx, DialTimeout)
	defer cancel()
	if p.Dial != nil {
		return p.Dial(ctx, "tcp", addr.String())
	}
	var d net.Dialer
	return d.DialContext(ctx, "tcp", addr.String())
}

// connect opens a tunnel for CONNECT host:port.
func (p *Proxy) connect(w http.ResponseWriter, r *http.Request) {
	authority := r.RequestURI
	// A client may half-close right after its request and the bytes it
	// wants tunnelled; net/http reads that as a client gone and cancels
	// the request's context. The lookup and the dial have their own
	// deadlines instead.
	ctx := context.WithoutCancel(r.Context())
	t, refused := p.check(ctx, r.Method, authority, 0)
	if refused != nil {
		p.refuse(w, refused)
		return
	}
	ev := Event{Method: r.Method, Host: t.host, Port: t.port, Addr: t.addr.Addr().String(), Decision: Allowed}
	up, err := p.dial(ctx, t.addr)
	if err != nil {
		ev.Reason = "connect failed: " + dialError(err)
		p.report(ev)
		http.Error(w, "runner egress proxy: cannot reach "+authority, http.StatusBadGateway)
		return
	}
	defer up.Close()
	rc := http.NewResponseController(w)
	down, buf, err := rc.Hijack()
	if err != nil {
		ev.Reason = "hijack: " + err.Error()
		p.report(ev)
		return
	}
	defer down.Close()
	if _, err := io.WriteString(down, "HTTP/1.1 200 Connection established\r\n\r\n"); err != nil {
		ev.Reason = "the client went away"
		p.report(ev)
		return
	}
	// Bytes the client sent after its request, already buffered.
	var early []byte
	if n := buf.Reader.Buffered(); n > 0 {
		early, _ = buf.Reader.Peek(n)
	}
	ev.BytesUp, ev.BytesDown = splice(down, up, early)
	p.report(ev)
}

// splice copies both ways until both directions end, passing each
// half-close on, and returns the byte counts.
func splice(client, upstream net.Conn, early []byte) (up, down int64) {
	var wg sync.WaitGroup
	var nUp, nDown atomic.Int64
	wg.Add(2)
	go func() {
		defer wg.Done()
		if len(early) > 0 {
			n, err := upstream.Write(early)
			nUp.Add(int64(n))
			if err != nil {
				closeWrite(upstream)
				return
			}
		}
		n, _ := io.Copy(upstream, client)
		nUp.Add(n)
		closeWrite(upstream)
	}()
	go func() {
		defer wg.Done()
		n, _ := io.Copy(client, upstream)
		nDown.Add(n)
		closeWrite(client)
	}()
	wg.Wait()
	return nUp.Load(), nDown.Load()
}

func closeWrite(c net.Conn) {
	if cw, ok := c.(interface{ CloseWrite() error }); ok {
		cw.CloseWrite()
		return
	}
	c.Close()
}

func dialError(err error) string {
	var op *net.OpError
	if errors.As(err, &op) && op.Err != nil {
		return op.Err.Error()
	}
	return err.Error()
}

// forward relays one plain-HTTP request written in absolute form
// ("GET http://host/path").
func (p *Proxy) forward(w http.ResponseWriter, r *http.Request) {
	if r.URL.Scheme != "http" || r.URL.Host == "" {
		msg := "runner egress proxy: want an absolute http:// URL, or CONNECT for https"
		p.report(Event{Method: r.Method, Host: r.URL.Host, Decision: Refused, Reason: "not a proxy request"})
		http.Error(w, msg, http.StatusBadRequest)
		return
	}
	if r.URL.User != nil {
		p.refuse(w, &Event{Method: r.Method, Host: r.URL.Hostname(), Decision: Refused, Reason: "user names in the address are not allowed"})
		return
	}
	t, refused := p.check(r.Context(), r.Method, r.URL.Host, 80)
	if refused != nil {
		p.refuse(w, refused)
		return
	}
	ev := Event{Method: r.Method, Host: t.host, Port: t.port, Addr: t.addr.Addr().String(), Decision: Allowed}
	var up, down counter
	var failure string
	rp := &httputil.ReverseProxy{
		Rewrite: func(pr *httputil.ProxyRequest) {
			pr.Out.URL.Scheme, pr.Out.URL.Host = "http", r.URL.Host
			// The Host header names the host dialled, never another one.
			pr.Out.Host = r.URL.Host
			pr.Out.Header.Del("Proxy-Authorization")
			pr.Out.Header.Del("Proxy-Connection")
			if pr.Out.Body != nil && pr.Out.Body != http.NoBody {
				pr.Out.Body = &countingBody{ReadCloser: pr.Out.Body, n: &up}
			}
		},
		Transport: &http.Transport{
			DialContext: func(ctx context.Context, _, _ string) (net.Conn, error) {
				return p.dial(ctx, t.addr)
			},
			DisableKeepAlives:     true,
			ResponseHeaderTimeout: 5 * time.Minute,
		},
		ModifyResponse: func(res *http.Response) error {
			res.Body = &countingBody{ReadCloser: res.Body, n: &down}
			return nil
		},
		ErrorHandler: func(w http.ResponseWriter, _ *http.Request, err error) {
			failure = "upstream failed: " + dialError(err)
			w.WriteHeader(http.StatusBadGateway)
		},
	}
	rp.ServeHTTP(w, r)
	ev.BytesUp, ev.BytesDown, ev.Reason = up.Load(), down.Load(), failure
	p.report(ev)
}

type counter = atomic.Int64

type countingBody struct {
	io.ReadCloser
	n *counter
}

func (c *countingBody) Read(b []byte) (int, error) {
	n, err := c.ReadCloser.Read(b)
	c.n.Add(int64(n))
	return n, err
}
