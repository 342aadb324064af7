package panics

import (
	"context"
	"errors"
	"strings"
	"sync"
	"testing"
)

func explode() error { panic("boom") }

func TestGoTurnsAPanicIntoAnErrorAndReportsIt(t *testing.T) {
	var mu sync.Mutex
	var heard []*Error
	ctx := WithHandler(context.Background(), func(e *Error) {
		mu.Lock()
		defer mu.Unlock()
		heard = append(heard, e)
	})

	err := <-Go(ctx, explode)

	var e *Error
	if !errors.As(err, &e) || e.Value != "boom" || err.Error() != "panic: boom" {
		t.Fatalf("Go returned %v, want the panic as an *Error", err)
	}
	if !strings.Contains(e.Stack, "panics.explode") {
		t.Errorf("the stack does not show where the panic happened:\n%s", e.Stack)
	}
	mu.Lock()
	defer mu.Unlock()
	if len(heard) != 1 || heard[0] != e {
		t.Errorf("the handler heard %v, want the one panic", heard)
	}
}

func TestGoPassesErrorsThrough(t *testing.T) {
	want := errors.New("plain failure")
	called := false
	ctx := WithHandler(context.Background(), func(*Error) { called = true })
	if err := <-Go(ctx, func() error { return want }); err != want {
		t.Errorf("Go returned %v, want %v", err, want)
	}
	if err := <-Go(ctx, func() error { return nil }); err != nil {
		t.Errorf("Go returned %v, want nil", err)
	}
	if called {
		t.Error("the handler was called without a panic")
	}
}

func TestCatchWithoutHandlerOrErr(t *testing.T) {
	done := make(chan struct{})
	go func() {
		defer close(done)
		defer Catch(context.Background(), nil)
		var m map[string]int
		m["x"] = 1 // a runtime error
	}()
	<-done // reaching here means the process survived
}

func TestUnwrapRuntimeError(t *testing.T) {
	err := <-Go(context.Background(), func() error {
		var p *struct{ x int }
		return errors.New(string(rune(p.x)))
	})
	var re interface{ RuntimeError() }
	if !errors.As(err, &re) {
		t.Errorf("%v does not unwrap to the runtime error", err)
	}
}
