// Package panics turns a panic on a goroutine that works for a task into
// an error of that task, so that one task's bug never ends the process and
// the other tasks of a run.
//
// A panic ends the process unless the goroutine it happens on recovers it,
// so every goroutine a task starts recovers its own: it runs under Go, or
// defers Catch first thing. The task's context carries a handler
// (WithHandler) that hears of every panic caught under it, wherever it
// happened, and can end the task.
package panics

import (
	"context"
	"fmt"
	"runtime/debug"
)

// Error is a recovered panic: its value and the stack of the goroutine
// that panicked, as debug.Stack prints it.
type Error struct {
	Value any
	Stack string
}

// Error returns "panic: <value>".
func (e *Error) Error() string { return fmt.Sprintf("panic: %v", e.Value) }

// Unwrap returns the value when it is an error.
func (e *Error) Unwrap() error {
	err, _ := e.Value.(error)
	return err
}

// New returns the panic v with the stack of the calling goroutine. Call it
// from the deferred function that recovered v, while the stack still shows
// where the panic happened.
func New(v any) *Error {
	return &Error{Value: v, Stack: string(debug.Stack())}
}

type handlerKey struct{}

// WithHandler returns a context whose goroutines report the panics they
// catch (see Catch and Go) to h, which must be safe for concurrent use.
func WithHandler(ctx context.Context, h func(*Error)) context.Context {
	return context.WithValue(ctx, handlerKey{}, h)
}

// Report hands e to ctx's handler, if it has one.
func Report(ctx context.Context, e *Error) {
	if h, ok := ctx.Value(handlerKey{}).(func(*Error)); ok && h != nil {
		h(e)
	}
}

// Catch, deferred first thing in a goroutine, stops a panic of that
// goroutine: it stores the panic in *err as an *Error (when err is not nil)
// and reports it to ctx's handler. Without a panic it does nothing. It must
// be deferred directly (defer panics.Catch(ctx, &err)), not called from
// another deferred function.
func Catch(ctx context.Context, err *error) {
	v := recover()
	if v == nil {
		return
	}
	e := New(v)
	if err != nil {
		*err = e
	}
	Report(ctx, e)
}

// Go runs fn on a new goroutine and sends what it returns, or its panic as
// an *Error (also reported to ctx's handler), on the returned channel,
// which holds the one value until it is read.
func Go(ctx context.Context, fn func() error) <-chan error {
	done := make(chan error, 1)
	go func() {
		var err error
		defer func() { done <- err }()
		defer Catch(ctx, &err)
		err = fn()
	}()
	return done
}
