// Command sandbox-channel is the sandbox's channel helper on its own: what
// `runner sandbox-channel` runs, in a small program. Build it static
// (CGO_ENABLED=0) and give it to the Docker backend (docker.Engine.UseChannel)
// where runner itself is not a static binary; see package sandbox/channel.
// With the argument egress-probe it is the probe of package
// sandbox/egressprobe, as `runner egress-probe` is.
package main

import (
	"os"

	"github.com/runner-dev/runner/sandbox/channel"
	"github.com/runner-dev/runner/sandbox/egressprobe"
)

func main() {
	if len(os.Args) > 1 && os.Args[1] == egressprobe.Subcommand {
		os.Exit(egressprobe.Main(os.Args[2:]))
	}
	os.Exit(channel.Main(os.Stdin, os.Stdout, os.Stderr))
}
