package main

import (
	"fmt"
	"log/slog"
	"os"

	"github.com/runner-dev/runner/sandbox/docker"
)

// channelEnv turns the command channel off (0) or on (1, the default).
const channelEnv = "RUNNER_CHANNEL"

// channelWanted reads RUNNER_CHANNEL: unset, empty or 1 is on; 0 is off;
// anything else is an error naming the variable.
func channelWanted(getenv func(string) string) (bool, error) {
	switch v := getenv(channelEnv); v {
	case "", "1":
		return true, nil
	case "0":
		return false, nil
	default:
		return false, fmt.Errorf("%s=%q: want 1 (the command channel, the default) or 0 (an exec per command)", channelEnv, v)
	}
}

// useChannel gives the engine's sandboxes the sandbox helper (see
// sandboxHelper) as their channel helper, when it is installed beside
// runner and RUNNER_CHANNEL is not 0. Otherwise every command costs an exec
// of the engine, as before, and the log says why.
func useChannel(e *docker.Engine, log *slog.Logger) error {
	on, err := channelWanted(os.Getenv)
	if err != nil || !on {
		return err
	}
	bin, err := sandboxHelper()
	if err == nil {
		err = e.UseChannel(bin)
	}
	if err != nil {
		log.Info("sandboxes run each command with an exec of their own", "why", err.Error())
	}
	return nil
}
