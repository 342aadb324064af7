package dockernet_test

import (
	"os"
	"testing"

	"github.com/runner-dev/runner/internal/dockertest"
	"github.com/runner-dev/runner/internal/egress"
)

// TestMain lets the test binary stand in for runner's: the proxy image is
// made of the running executable, which is started as "egress-proxy".
func TestMain(m *testing.M) {
	if len(os.Args) > 1 && os.Args[1] == "egress-proxy" {
		os.Exit(egress.Main(os.Args[2:], os.Stdout, os.Stderr))
	}
	os.Exit(dockertest.Main(m))
}
