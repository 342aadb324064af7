//go:build unix

package policy

import (
	"os/exec"
	"syscall"
)

// ownProcessGroup puts the hook in a process group of its own, so that a
// timeout kills whatever it started too.
func ownProcessGroup(cmd *exec.Cmd) {
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	cmd.Cancel = func() error { return syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL) }
}
