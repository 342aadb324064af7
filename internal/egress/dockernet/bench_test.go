package dockernet_test

import (
	"context"
	"testing"

	"github.com/moby/moby/client"

	"github.com/runner-dev/runner/internal/dockertest"
	"github.com/runner-dev/runner/sandbox"
)

// BenchmarkDownload fetches a 16 MiB file four times per operation from a
// server of the benchmark's own: "direct" from a sandbox on the engine's
// bridge, "proxy" from a sandbox with an allowlist, through the egress
// proxy. Their ratio is the proxy's cost (BENCHMARKS.md).
func BenchmarkDownload(b *testing.B) {
	cli := dockertest.Client(b)
	e := dockertest.Engine(b)
	up := dockertest.UpstreamNetwork(b)
	_, id := dockertest.WebServerWith(b, up, "bench", "dd if=/dev/zero of=big bs=1M count=16 2>/dev/null", "files.example.test")
	if _, err := cli.NetworkConnect(context.Background(), "bridge", client.NetworkConnectOptions{Container: id}); err != nil {
		b.Fatal(err)
	}
	res, err := cli.ContainerInspect(context.Background(), id, client.ContainerInspectOptions{})
	if err != nil {
		b.Fatal(err)
	}
	bridgeIP := res.Container.NetworkSettings.Networks["bridge"].IPAddress.String()
	cases := []struct {
		name string
		cfg  sandbox.Config
		url  string
	}{
		{"direct", sandbox.Config{Network: "bridge"}, "http://" + bridgeIP + "/big"},
		{"proxy", sandbox.Config{Egress: []string{"files.example.test:80"}, EgressUpstream: up}, "http://files.example.test/big"},
	}
	for _, c := range cases {
		b.Run(c.name, func(b *testing.B) {
			cfg := c.cfg
			cfg.Image, cfg.RunID = dockertest.Busybox(b), dockertest.RunID+"-bench"
			sb, err := e.Start(context.Background(), cfg)
			if err != nil {
				b.Fatal(err)
			}
			defer sb.Close(context.Background())
			cmd := "for i in 1 2 3 4; do wget -q -O /dev/null " + c.url + " || exit 1; done"
			b.SetBytes(4 << 24)
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				r, err := sb.Exec(context.Background(), cmd, sandbox.ExecOptions{})
				if err != nil || r.ExitCode != 0 {
					b.Fatalf("%s: %v, exit %d: %s", cmd, err, r.ExitCode, r.Output)
				}
			}
		})
	}
}
