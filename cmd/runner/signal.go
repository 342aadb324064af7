package main

import (
	"context"
	"os"
	"os/signal"
	"sync"
	"syscall"

	"github.com/runner-dev/runner/internal/cli"
)

// signalContext returns a context that is cancelled, with cause
// cli.ErrInterrupted, on the first SIGINT or SIGTERM, so that the command
// can stop its work and clean up (remove containers, record results). A
// second signal does not wait for that: the process prints the note set
// with onForcedExit, if any, and exits at once with code 130. stop releases
// the signals (after it they act as by default) and cancels ctx; it may be
// called more than once.
func signalContext(parent context.Context) (ctx context.Context, stop func()) {
	note := &exitNote{}
	ctx, cancel := context.WithCancelCause(context.WithValue(parent, exitNoteKey{}, note))
	sigs := make(chan os.Signal, 2)
	signal.Notify(sigs, os.Interrupt, syscall.SIGTERM)
	done := make(chan struct{})
	go func() {
		select {
		case <-sigs:
			cancel(cli.ErrInterrupted)
		case <-done:
			return
		}
		select {
		case <-sigs:
			note.print()
			os.Exit(cli.ExitInterrupted)
		case <-done:
		}
	}()
	var once sync.Once
	return ctx, func() {
		once.Do(func() {
			signal.Stop(sigs)
			close(done)
			cancel(context.Canceled)
		})
	}
}

// exitNote is what a second signal prints before the process exits at once:
// how to deal with what the interrupted work leaves behind.
type exitNote struct {
	mu    sync.Mutex
	write func()
}

type exitNoteKey struct{}

func (n *exitNote) print() {
	n.mu.Lock()
	defer n.mu.Unlock()
	if n.write != nil {
		n.write()
	}
}

// onForcedExit sets what a second signal prints, through write, before the
// process exits at once; nil prints nothing. It does nothing when ctx does
// not come from signalContext.
func onForcedExit(ctx context.Context, write func()) {
	if n, ok := ctx.Value(exitNoteKey{}).(*exitNote); ok {
		n.mu.Lock()
		n.write = write
		n.mu.Unlock()
	}
}
