package fakellm

import (
	"encoding/json"
	"errors"
	"net"
	"net/http"
	"sync"
)

// This file holds what a test uses to play an endpoint that is down, that
// throttles, or that refuses the key: the listener that can go away and come
// back on the same port, the answers to GET /models, the disruptions that
// take the place of scripted turns, and the count of requests in flight.

// Down closes the server's listening socket and every open connection:
// from then on a client's connections are refused, as by a server that is
// not running. Requests in flight are cut off. Up brings it back.
func (s *Server) Down() {
	s.ln.down()
	s.srv.CloseClientConnections()
}

// Up listens again on the same address after Down. It fails the test if
// the address was taken meanwhile.
func (s *Server) Up() {
	if err := s.ln.up(); err != nil {
		s.t.Errorf("fakellm: listen again on %s: %v", s.ln.addr, err)
	}
}

// Disrupt answers every every-th chat request from now on (every 1: all of
// them) with t instead of the next scripted turn, which stays for a later
// request: a 503 outage with ServerError(503), a storm of rate limits with
// RateLimited. Calm ends the disruption.
func (s *Server) Disrupt(every int, t Turn) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.disrupt, s.disruptEvery, s.disruptSeen = &t, max(every, 1), 0
}

// Calm ends a disruption.
func (s *Server) Calm() {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.disrupt = nil
}

// Disrupted counts the requests answered by a disruption so far.
func (s *Server) Disrupted() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.disrupted
}

// Peak is the largest number of chat requests that were in flight at once
// (from arrival to the end of their answer) among those that arrived since
// the last ResetPeak, or since the server started.
func (s *Server) Peak() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.peak
}

// ResetPeak starts a new measure of Peak; requests already in flight do not
// count in it.
func (s *Server) ResetPeak() {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.epoch++
	s.inFlight, s.peak = 0, 0
}

// RequireKey makes the server answer 401 invalid_api_key, to chat requests
// and to GET /models alike, unless the request carries "Authorization:
// Bearer key". Without it any key, or none, is accepted.
func (s *Server) RequireKey(key string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.key = key
}

// Models sets the answer to GET /models (and /v1/models): a status turn
// such as Status(404, ...) or ServerError(503). By default the server
// answers 200 with a list holding one model, "gpt-4o-mini".
func (s *Server) Models(t Turn) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.models = &t
}

// ModelListRequests counts the GET /models requests received so far.
func (s *Server) ModelListRequests() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.modelLists
}

// serveModels answers GET /models.
func (s *Server) serveModels(w http.ResponseWriter, r *http.Request) {
	s.mu.Lock()
	s.modelLists++
	t, refused := s.models, !s.authorized(r)
	s.mu.Unlock()
	switch {
	case refused:
		s.play(w, r, Request{}, Unauthorized())
	case t != nil:
		s.play(w, r, Request{}, *t)
	default:
		b, _ := json.Marshal(map[string]any{"object": "list", "data": []map[string]any{
			{"id": "gpt-4o-mini", "object": "model", "created": 1721172741, "owned_by": "fakellm"},
		}})
		writeJSON(w, http.StatusOK, nil, string(b))
	}
}

// authorized tells whether r carries the key RequireKey asked for; the
// caller holds mu.
func (s *Server) authorized(r *http.Request) bool {
	return s.key == "" || r.Header.Get("Authorization") == "Bearer "+s.key
}

// arrive counts a chat request in flight and returns the turn a disruption
// plays instead of the script (nil when none), whether the key is refused,
// and the function to call when the answer is written.
func (s *Server) arrive(r *http.Request) (disruption *Turn, refused bool, leave func()) {
	s.mu.Lock()
	defer s.mu.Unlock()
	epoch := s.epoch
	s.inFlight++
	s.peak = max(s.peak, s.inFlight)
	if s.disrupt != nil {
		s.disruptSeen++
		if s.disruptSeen%s.disruptEvery == 0 {
			s.disrupted++
			disruption = s.disrupt
		}
	}
	leave = func() {
		s.mu.Lock()
		defer s.mu.Unlock()
		if s.epoch == epoch {
			s.inFlight--
		}
	}
	return disruption, !s.authorized(r), leave
}

// listener is the server's listening socket, which Down closes and Up
// opens again on the same address. While it is down, Accept waits.
type listener struct {
	addr string

	mu     sync.Mutex
	ln     net.Listener // nil while down
	closed bool
	wake   chan struct{} // closed when the state changes
}

func newListener() (*listener, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, err
	}
	return &listener{addr: ln.Addr().String(), ln: ln, wake: make(chan struct{})}, nil
}

// Accept returns the next connection, waiting through a Down.
func (l *listener) Accept() (net.Conn, error) {
	for {
		l.mu.Lock()
		ln, closed, wake := l.ln, l.closed, l.wake
		l.mu.Unlock()
		if closed {
			return nil, net.ErrClosed
		}
		if ln == nil {
			<-wake
			continue
		}
		c, err := ln.Accept()
		if err == nil {
			return c, nil
		}
		l.mu.Lock()
		current := l.ln
		l.mu.Unlock()
		if current == ln && !errors.Is(err, net.ErrClosed) {
			return nil, err
		}
		// The socket was closed by Down or Close: look again.
	}
}

func (l *listener) down() {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.ln != nil {
		l.ln.Close()
		l.ln = nil
		l.signal()
	}
}

func (l *listener) up() error {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.ln != nil || l.closed {
		return nil
	}
	ln, err := net.Listen("tcp", l.addr)
	if err != nil {
		return err
	}
	l.ln = ln
	l.signal()
	return nil
}

// signal wakes an Accept waiting through a Down; the caller holds mu.
func (l *listener) signal() {
	close(l.wake)
	l.wake = make(chan struct{})
}

func (l *listener) Close() error {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.closed {
		return nil
	}
	l.closed = true
	if l.ln != nil {
		l.ln.Close()
		l.ln = nil
	}
	l.signal()
	return nil
}

func (l *listener) Addr() net.Addr {
	addr, _ := net.ResolveTCPAddr("tcp", l.addr)
	return addr
}
