package channel

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"sync"

	"golang.org/x/sys/unix"
)

// Serve is the helper: it says hello on w, then serves the requests read
// from r, each in a goroutine of its own, until r ends or a frame breaks
// the protocol. When it returns, the commands still running have been told
// to stop (their wrapper's stdin closed) as at a timeout.
//
// The helper makes itself not dumpable, so that the sandbox's processes,
// although they run as the same user, cannot open its descriptors through
// /proc/PID/fd nor trace it: the two pipes of the channel are reachable
// only by the helper and the engine. It reserves its threads before it
// says hello (see spareThreads).
func Serve(r io.Reader, w io.Writer) error {
	_ = unix.Prctl(unix.PR_SET_DUMPABLE, 0, 0, 0, 0)
	reserveThreads(spareThreads)
	s := &server{w: w, running: map[uint32]context.CancelFunc{}}
	hello, _ := json.Marshal(Hello{Protocol: Protocol, Version: Version, PID: os.Getpid()})
	if err := s.send(KindHello, 0, hello); err != nil {
		return err
	}
	ctx, stop := context.WithCancel(context.Background())
	defer func() {
		stop()
		s.wg.Wait()
	}()
	for {
		f, err := readFrame(r)
		if err == io.EOF {
			return nil
		}
		if err != nil {
			return err
		}
		if f.kind != KindRequest {
			return fmt.Errorf("%w: kind %d from the host", ErrMalformed, f.kind)
		}
		var req Request
		if err := json.Unmarshal(f.payload, &req); err != nil {
			return fmt.Errorf("%w: request %d: %v", ErrMalformed, f.id, err)
		}
		if req.Op == OpCancel {
			s.cancel(req.Target)
			continue
		}
		if f.id == 0 {
			return fmt.Errorf("%w: request with id 0", ErrMalformed)
		}
		rctx, cancel := context.WithCancel(ctx)
		if !s.begin(f.id, cancel) {
			cancel()
			return fmt.Errorf("%w: request id %d already in use", ErrMalformed, f.id)
		}
		s.wg.Add(1)
		go func() {
			defer s.wg.Done()
			defer s.end(f.id)
			rep := s.handle(rctx, f.id, req)
			body, err := json.Marshal(rep)
			if err != nil {
				body, _ = json.Marshal(Reply{Error: toError(err)})
			}
			if len(body) > MaxPayload {
				body, _ = json.Marshal(Reply{Error: &Error{Code: "other", Message: "reply too large"}})
			}
			s.send(KindReply, f.id, body)
		}()
	}
}

type server struct {
	wmu sync.Mutex
	w   io.Writer

	mu      sync.Mutex
	running map[uint32]context.CancelFunc
	wg      sync.WaitGroup
}

func (s *server) send(kind Kind, id uint32, body []byte) error {
	s.wmu.Lock()
	defer s.wmu.Unlock()
	return writeFrame(s.w, kind, id, body)
}

func (s *server) begin(id uint32, cancel context.CancelFunc) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	if _, dup := s.running[id]; dup {
		return false
	}
	s.running[id] = cancel
	return true
}

func (s *server) end(id uint32) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if cancel, ok := s.running[id]; ok {
		cancel()
		delete(s.running, id)
	}
}

func (s *server) cancel(id uint32) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if cancel, ok := s.running[id]; ok {
		cancel()
	}
}

// handle performs one request.
func (s *server) handle(ctx context.Context, id uint32, req Request) Reply {
	var rep Reply
	var err error
	switch req.Op {
	case OpExec:
		rep.Exec, err = runCommand(ctx, req)
	case OpRead:
		rep.Data, err = readFile(req.Path)
	case OpWrite:
		err = writeFile(req.Path, req.Data, req.Mode)
	case OpList:
		rep.Files, err = listFiles(req.Path, req.Recursive)
	case OpTar:
		err = streamTar(ctx, func(p []byte) error { return s.send(KindData, id, p) })
	default:
		err = fmt.Errorf("unknown operation %q", req.Op)
	}
	if err != nil {
		rep.Exec = nil
		rep.Error = toError(err)
	}
	return rep
}
