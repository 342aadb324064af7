package main

import (
	"strings"
	"testing"
)

// The sandbox helper is looked for beside runner's own executable only;
// without it the error says how to install it. (The end-to-end tests run a
// runner built with the helper beside it, as installed.)
func TestSandboxHelperMissing(t *testing.T) {
	_, err := sandboxHelper()
	if err == nil || !strings.Contains(err.Error(), "go install ./cmd/runner ./cmd/sandbox-channel") {
		t.Fatalf("sandboxHelper beside the test binary: %v; want an error saying how to install it", err)
	}
}
