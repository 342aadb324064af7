package dockertest

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	mathrand "math/rand/v2"
	"net/netip"
	"sync"
	"testing"

	"github.com/moby/moby/api/types/container"
	"github.com/moby/moby/api/types/network"
	"github.com/moby/moby/client"
)

// LabelTest marks the networks and containers these helpers create.
const LabelTest = "dev.runner.test"

var (
	clientOnce sync.Once
	cli        *client.Client
	cliErr     error
)

// Client returns a shared engine client, for what package sandbox does not
// offer (networks, containers that are not sandboxes).
func Client(t testing.TB) *client.Client {
	t.Helper()
	Engine(t) // fails or skips the test without an engine
	clientOnce.Do(func() {
		cli, cliErr = client.New(client.FromEnv)
		if cliErr == nil {
			_, cliErr = cli.Ping(context.Background(), client.PingOptions{NegotiateAPIVersion: true})
		}
	})
	if cliErr != nil {
		t.Fatal(cliErr)
	}
	return cli
}

func randomID() string {
	b := make([]byte, 4)
	rand.Read(b)
	return hex.EncodeToString(b)
}

// UpstreamNetwork is the tests' stand-in for the internet: a bridge
// network in a documentation range (a /28 of 198.51.100.0/24: not
// private, routed nowhere), removed at the end of the test. Test
// processes running at once each get a free /28.
func UpstreamNetwork(t testing.TB) string {
	t.Helper()
	c := Client(t)
	name := "runner-test-upstream-" + randomID()
	var err error
	for _, i := range mathrand.Perm(16) {
		subnet := netip.PrefixFrom(netip.AddrFrom4([4]byte{198, 51, 100, byte(16 * i)}), 28)
		_, err = c.NetworkCreate(context.Background(), name, client.NetworkCreateOptions{
			Driver: "bridge", Labels: map[string]string{LabelTest: "1"},
			IPAM: &network.IPAM{Config: []network.IPAMConfig{{Subnet: subnet}}},
		})
		if err == nil {
			t.Cleanup(func() { c.NetworkRemove(context.Background(), name, client.NetworkRemoveOptions{}) })
			return name
		}
	}
	t.Fatalf("create the test's upstream network: %v", err)
	return ""
}

// WebServer starts busybox httpd serving body at / on network net, under
// the given DNS aliases, until the end of the test. It returns the
// server's address on net and its container id.
func WebServer(t testing.TB, net, body string, aliases ...string) (netip.Addr, string) {
	t.Helper()
	return WebServerWith(t, net, body, "", aliases...)
}

// WebServerWith is WebServer with a shell snippet run in /tmp/www before
// the server starts, to add files.
func WebServerWith(t testing.TB, net, body, setup string, aliases ...string) (netip.Addr, string) {
	t.Helper()
	c := Client(t)
	ctx := context.Background()
	created, err := c.ContainerCreate(ctx, client.ContainerCreateOptions{
		Name: "runner-test-web-" + randomID(),
		Config: &container.Config{Image: Busybox(t), Labels: map[string]string{LabelTest: "1"},
			Cmd: []string{"sh", "-c", `mkdir -p /tmp/www && cd /tmp/www && printf '%s\n' "$0" > index.html && eval "$1" && exec httpd -f -p 80 -h /tmp/www`, body, setup + ":"}},
		HostConfig: &container.HostConfig{NetworkMode: container.NetworkMode(net)},
		NetworkingConfig: &network.NetworkingConfig{EndpointsConfig: map[string]*network.EndpointSettings{
			net: {Aliases: aliases},
		}},
	})
	t.Cleanup(func() {
		if created.ID != "" {
			c.ContainerRemove(context.Background(), created.ID, client.ContainerRemoveOptions{Force: true})
		}
	})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := c.ContainerStart(ctx, created.ID, client.ContainerStartOptions{}); err != nil {
		t.Fatal(err)
	}
	res, err := c.ContainerInspect(ctx, created.ID, client.ContainerInspectOptions{})
	if err != nil {
		t.Fatal(err)
	}
	return res.Container.NetworkSettings.Networks[net].IPAddress, created.ID
}
