package docker

import (
	"context"
	"slices"
	"sync/atomic"
	"time"

	"github.com/moby/moby/client"

	"github.com/runner-dev/runner/sandbox"
)

// Engine is a connection to a Docker engine, local or remote (DOCKER_HOST
// tcp:// or ssh://). Nothing in this package needs a filesystem shared
// with the engine: the one use it makes of one, the channel helper's
// mount, falls back to a copy (see helperDelivery).
type Engine struct {
	cli *client.Client
	// owner labels the sandboxes this Engine starts.
	owner sandbox.Owner
	// channelHelper is the helper binary of the sandboxes' channel, ""
	// for none (see UseChannel).
	channelHelper string
	// channelBind, set when the engine runs on this machine, is whether
	// the helper is still mounted rather than copied (see helperDelivery).
	channelBind *atomic.Bool
}

var _ sandbox.Backend = (*Engine)(nil)

// Connect opens a client configured from the environment (DOCKER_HOST,
// DOCKER_TLS_VERIFY, DOCKER_CERT_PATH, DOCKER_API_VERSION), negotiates the
// API version and checks that the daemon answers.
func Connect(ctx context.Context) (*Engine, error) {
	cli, err := client.New(client.FromEnv)
	if err != nil {
		return nil, err
	}
	e := &Engine{cli: cli, owner: sandbox.Self()}
	ctx, cancel := context.WithTimeout(ctx, 15*time.Second)
	defer cancel()
	if _, err := cli.Ping(ctx, client.PingOptions{NegotiateAPIVersion: true}); err != nil {
		cli.Close()
		return nil, e.explain("connect", "", err)
	}
	return e, nil
}

// OwnedBy returns an Engine sharing e's connection whose sandboxes name o
// as their owner instead of this process, as a run started by another
// process would. Close e, not the Engine returned.
func (e *Engine) OwnedBy(o sandbox.Owner) *Engine {
	c := *e
	c.owner = o
	return &c
}

// Close releases the connection; sandboxes keep running.
func (e *Engine) Close() error { return e.cli.Close() }

// Info describes the engine: its address, version and OCI runtimes.
func (e *Engine) Info(ctx context.Context) (sandbox.Info, error) {
	res, err := e.cli.Info(ctx, client.InfoOptions{})
	if err != nil {
		return sandbox.Info{}, e.explain("describe the engine", "", err)
	}
	info := sandbox.Info{
		Kind: "docker", Address: e.cli.DaemonHost(), Version: res.Info.ServerVersion,
		DefaultRuntime: res.Info.DefaultRuntime,
	}
	for name := range res.Info.Runtimes {
		info.Runtimes = append(info.Runtimes, name)
	}
	slices.Sort(info.Runtimes)
	return info, nil
}

// Host is the daemon address in use.
func (e *Engine) Host() string { return e.cli.DaemonHost() }
