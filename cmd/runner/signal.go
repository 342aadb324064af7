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
// second signal does not wait for that: the process exits at once with
// code 130. stop releases the signals (after it they act as by default) and
// cancels ctx; it may be called more than once.
func signalContext(parent context.Context) (ctx context.Context, stop func()) {
	ctx, cancel := context.WithCancelCause(parent)
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
