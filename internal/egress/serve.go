package egress

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"sync"
	"time"

	"golang.org/x/net/netutil"
)

// Ready is the Method of the first line Serve writes, once it listens:
// Host and Port are the address it listens on.
const Ready = "READY"

// maxConns caps the connections open at once, so that a sandbox cannot
// exhaust the proxy's memory or file descriptors.
const maxConns = 256

// Serve runs the proxy on addr until ctx ends. It writes one JSON Event a
// line to events: first a Ready event, then every decision. Writes to
// events are serialised; an error writing them stops the proxy, so that
// no connection goes unrecorded.
func Serve(ctx context.Context, addr string, allow Allowlist, events io.Writer) error {
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return fmt.Errorf("egress proxy: %w", err)
	}
	ctx, stop := context.WithCancelCause(ctx)
	defer stop(nil)
	var mu sync.Mutex
	enc := json.NewEncoder(events)
	write := func(ev Event) {
		mu.Lock()
		defer mu.Unlock()
		if err := enc.Encode(ev); err != nil {
			stop(fmt.Errorf("egress proxy: write event: %w", err))
		}
	}
	p := &Proxy{Allow: allow, Report: write}
	srv := &http.Server{
		Handler:           p,
		ReadHeaderTimeout: 30 * time.Second,
		MaxHeaderBytes:    64 << 10,
		ErrorLog:          nil,
	}
	tcp := ln.Addr().(*net.TCPAddr)
	write(Event{Time: time.Now().UTC(), Method: Ready, Host: tcp.IP.String(), Port: tcp.Port, Decision: Allowed})
	done := make(chan error, 1)
	go func() { done <- srv.Serve(netutil.LimitListener(ln, maxConns)) }()
	select {
	case err := <-done:
		return fmt.Errorf("egress proxy: %w", err)
	case <-ctx.Done():
	}
	sctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	srv.Shutdown(sctx)
	srv.Close()
	if err := context.Cause(ctx); err != nil && !errors.Is(err, context.Canceled) {
		return err
	}
	return nil
}
