package sandbox

import (
	"errors"
	"fmt"

	"github.com/runner-dev/runner/internal/egress"
)

// ErrEgressStopped is wrapped by every command's error of a sandbox whose
// egress proxy stopped: the sandbox then has no network at all, and the
// task cannot trust what it saw of the network.
var ErrEgressStopped = errors.New("egress proxy stopped")

// checkEgress validates the egress part of a Config.
func (c Config) checkEgress() error {
	if len(c.Egress) == 0 {
		return nil
	}
	if c.Network != DefaultNetwork {
		return fmt.Errorf("sandbox config: network %q and an egress allowlist exclude each other", c.Network)
	}
	if _, err := egress.ParseAllowlist(c.Egress); err != nil {
		return fmt.Errorf("sandbox config: egress: %w", err)
	}
	return nil
}
