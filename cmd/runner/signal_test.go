package main

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"syscall"
	"testing"
	"time"

	"github.com/runner-dev/runner/internal/cli"
)

// runHelper runs the helper named by RUNNER_TEST_HELPER in a child test
// process and returns its exit code.
func runHelper(name string) int {
	switch name {
	case "signal":
		// Wait for the first signal, then stand for a clean-up that
		// takes long: only a second signal ends it early.
		ctx, stop := signalContext(context.Background())
		defer stop()
		fmt.Println("ready")
		<-ctx.Done()
		fmt.Println("cancelled:", context.Cause(ctx))
		time.Sleep(time.Minute)
		return 0
	}
	fmt.Fprintf(os.Stderr, "unknown helper %q\n", name)
	return 3
}

func TestSignalContext(t *testing.T) {
	tests := []struct {
		name          string
		first, second syscall.Signal
	}{
		{"interrupt then interrupt", syscall.SIGINT, syscall.SIGINT},
		{"terminate then interrupt", syscall.SIGTERM, syscall.SIGINT},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
			defer cancel()
			cmd := exec.CommandContext(ctx, os.Args[0], "-test.run=^$")
			cmd.Env = append(os.Environ(), "RUNNER_TEST_HELPER=signal")
			cmd.Stderr = os.Stderr
			out, err := cmd.StdoutPipe()
			if err != nil {
				t.Fatal(err)
			}
			if err := cmd.Start(); err != nil {
				t.Fatal(err)
			}
			defer cmd.Process.Kill()
			sc := bufio.NewScanner(out)
			expect := func(want string) {
				t.Helper()
				if !sc.Scan() {
					t.Fatalf("helper output ended (%v), want %q", sc.Err(), want)
				}
				if got := sc.Text(); got != want {
					t.Fatalf("helper said %q, want %q", got, want)
				}
			}
			expect("ready")
			cmd.Process.Signal(tt.first)
			expect("cancelled: " + cli.ErrInterrupted.Error())
			start := time.Now()
			cmd.Process.Signal(tt.second)
			err = cmd.Wait()
			var exit *exec.ExitError
			if !errors.As(err, &exit) || exit.ExitCode() != cli.ExitInterrupted {
				t.Fatalf("after the second signal: %v, want exit code %d", err, cli.ExitInterrupted)
			}
			if d := time.Since(start); d > 10*time.Second {
				t.Errorf("the second signal took %s to end the process", d)
			}
		})
	}
}

func TestSignalContextStop(t *testing.T) {
	ctx, stop := signalContext(context.Background())
	stop()
	stop() // idempotent
	select {
	case <-ctx.Done():
	default:
		t.Fatal("ctx not done after stop")
	}
	if cause := context.Cause(ctx); errors.Is(cause, cli.ErrInterrupted) {
		t.Errorf("cause after stop = %v, want no interruption", cause)
	}
}
