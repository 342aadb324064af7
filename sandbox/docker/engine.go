package docker

import (
	"context"
	"time"

	"github.com/moby/moby/client"
)

// Engine is a connection to a Docker engine, local or remote (DOCKER_HOST
// tcp:// or ssh://). Nothing in this package relies on a filesystem shared
// with the engine.
type Engine struct {
	cli *client.Client
}

// Connect opens a client configured from the environment (DOCKER_HOST,
// DOCKER_TLS_VERIFY, DOCKER_CERT_PATH, DOCKER_API_VERSION), negotiates the
// API version and checks that the daemon answers.
func Connect(ctx context.Context) (*Engine, error) {
	cli, err := client.New(client.FromEnv)
	if err != nil {
		return nil, err
	}
	e := &Engine{cli: cli}
	ctx, cancel := context.WithTimeout(ctx, 15*time.Second)
	defer cancel()
	if _, err := cli.Ping(ctx, client.PingOptions{NegotiateAPIVersion: true}); err != nil {
		cli.Close()
		return nil, e.explain("connect", "", err)
	}
	return e, nil
}

// Close releases the connection; sandboxes keep running.
func (e *Engine) Close() error { return e.cli.Close() }

// Host is the daemon address in use.
func (e *Engine) Host() string { return e.cli.DaemonHost() }
