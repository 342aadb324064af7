package tasks

import (
	"fmt"
	"math"
	"regexp"
	"strconv"
	"strings"
)

// minMemory is the smallest memory cap the Docker engine accepts.
const minMemory = 6 << 20

// minDisk is the smallest disk limit: the sandbox's scratch space.
const minDisk = 1 << 20

// minCommitSize is the smallest limits.commit_size.
const minCommitSize = 1 << 20

// memorySize matches "512m", "2g", "1.5GiB", "2GB", "1048576".
var memorySize = regexp.MustCompile(`^([0-9]+(?:\.[0-9]+)?) ?([kmgt]?)(i?b)?$`)

// ParseMemory converts a memory size to bytes. Units are binary, as Docker
// reads them: k, m, g, t (optionally followed by "b" or "ib", in any case)
// multiply by 1024, 1024², ...; a bare number is bytes.
func ParseMemory(s string) (int64, error) {
	m := memorySize.FindStringSubmatch(strings.ToLower(strings.TrimSpace(s)))
	if m == nil {
		return 0, fmt.Errorf("memory size %q: want a number with an optional unit, like 512m or 2g", s)
	}
	n, err := strconv.ParseFloat(m[1], 64)
	if err != nil {
		return 0, fmt.Errorf("memory size %q: %w", s, err)
	}
	shift := 0
	if m[2] != "" {
		shift = strings.Index("kmgt", m[2]) + 1
	}
	bytes := n * math.Pow(1024, float64(shift))
	if bytes >= math.MaxInt64 {
		return 0, fmt.Errorf("memory size %q is too large", s)
	}
	return int64(bytes), nil
}
