package tasks

import (
	"bufio"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"strings"
	"testing"
)

func TestStoreLockRefusesSecondOpener(t *testing.T) {
	dir := t.TempDir()
	s := openStore(t, dir)
	_, err := OpenStore(dir)
	var le *LockedError
	if !errors.Is(err, ErrLocked) || !errors.As(err, &le) {
		t.Fatalf("second OpenStore: got %v, want a LockedError", err)
	}
	if le.PID != os.Getpid() {
		t.Errorf("LockedError.PID = %d, want %d", le.PID, os.Getpid())
	}
	if want := fmt.Sprintf("(pid %d holds", os.Getpid()); !strings.Contains(err.Error(), want) {
		t.Errorf("error %q does not name the holder %q", err, want)
	}
	s.Close()
	s2, err := OpenStore(dir)
	if err != nil {
		t.Fatalf("OpenStore after Close: %v", err)
	}
	s2.Close()
}

// TestStoreLockAcrossProcesses holds the lock in a child process, and checks
// that it is named in the error and released when the child dies.
func TestStoreLockAcrossProcesses(t *testing.T) {
	if dir := os.Getenv("TASKS_HOLD_LOCK"); dir != "" {
		s, err := OpenStore(dir)
		if err != nil {
			fmt.Println("error:", err)
			os.Exit(1)
		}
		defer s.Close()
		fmt.Println("locked")
		bufio.NewReader(os.Stdin).ReadString('\n') // hold until the parent says
		os.Exit(0)
	}
	dir := t.TempDir()
	cmd := exec.Command(os.Args[0], "-test.run=^TestStoreLockAcrossProcesses$")
	cmd.Env = append(os.Environ(), "TASKS_HOLD_LOCK="+dir)
	stdin, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cmd.Process.Kill(); cmd.Wait() })
	line, err := bufio.NewReader(stdout).ReadString('\n')
	if err != nil || line != "locked\n" {
		t.Fatalf("child: got %q, %v; want locked", line, err)
	}

	_, err = OpenStore(dir)
	var le *LockedError
	if !errors.As(err, &le) || le.PID != cmd.Process.Pid {
		t.Fatalf("OpenStore while the child holds it: got %v, want a LockedError naming pid %d", err, cmd.Process.Pid)
	}

	if err := cmd.Process.Kill(); err != nil { // a crash, not a clean Close
		t.Fatal(err)
	}
	cmd.Wait()
	stdin.Close()
	s, err := OpenStore(dir)
	if err != nil {
		t.Fatalf("OpenStore after the holder died: %v", err)
	}
	s.Close()
}
