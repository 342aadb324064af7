//go:build !(linux || darwin || freebsd || netbsd || openbsd || dragonfly)

package tasks

import (
	"errors"
	"os"
)

// lockFile is unavailable where flock(2) is missing.
func lockFile(path string) (*os.File, error) {
	return nil, errors.New("lock out directory: not supported on this platform")
}
