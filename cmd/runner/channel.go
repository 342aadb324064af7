package main

import (
	"log/slog"
	"os"

	"github.com/runner-dev/runner/sandbox/docker"
)

// useChannel gives the engine's sandboxes runner itself as their channel
// helper (`runner sandbox-channel`), when runner is a static executable
// (built with CGO_ENABLED=0, as released). Otherwise every command costs an
// exec of the engine, as before, and the log says why.
func useChannel(e *docker.Engine, log *slog.Logger) {
	if os.Getenv("RUNNER_CHANNEL") != "1" {
		// Off by default for now: a command's reply can be lost (about one
		// in a thousand under load, TestChannelThousandCommands), and the
		// command then waits out its timeout.
		return
	}
	exe, err := os.Executable()
	if err == nil {
		err = e.UseChannel(exe)
	}
	if err != nil {
		log.Info("sandboxes run each command with an exec of their own", "why", err.Error())
	}
}
