package main

import (
	"fmt"
	"os"
	"path/filepath"

	"github.com/runner-dev/runner/sandbox/channel"
)

// helperName is the file name of the sandbox helper, cmd/sandbox-channel,
// installed beside runner (`CGO_ENABLED=0 go install ./cmd/runner
// ./cmd/sandbox-channel`).
const helperName = "sandbox-channel"

// sandboxHelper is the static program every sandbox gets a copy of: it
// serves the command channel (Docker) and runs the egress probe of a
// network none pod (Kubernetes). It is cmd/sandbox-channel beside runner's
// own executable, a program of a few megabytes: runner itself holds the
// Kubernetes client and is far too large to copy into each sandbox. The
// error says what is missing and how to install it.
func sandboxHelper() (string, error) {
	exe, err := os.Executable()
	if err != nil {
		return "", fmt.Errorf("the sandbox helper: %w", err)
	}
	if resolved, err := filepath.EvalSymlinks(exe); err == nil {
		exe = resolved
	}
	bin := filepath.Join(filepath.Dir(exe), helperName)
	if _, err := os.Stat(bin); err != nil {
		return "", fmt.Errorf("no sandbox helper %s beside runner: install it with runner (CGO_ENABLED=0 go install ./cmd/runner ./cmd/sandbox-channel)", bin)
	}
	if err := channel.CheckBinary(bin); err != nil {
		return "", err
	}
	return bin, nil
}
