// Command sandbox-channel is the sandbox's channel helper on its own: what
// `runner sandbox-channel` runs, in a small program. Build it static
// (CGO_ENABLED=0) and give it to the Docker backend (docker.Engine.UseChannel)
// where runner itself is not a static binary; see package sandbox/channel.
package main

import (
	"os"

	"github.com/runner-dev/runner/sandbox/channel"
)

func main() {
	os.Exit(channel.Main(os.Stdin, os.Stdout, os.Stderr))
}
