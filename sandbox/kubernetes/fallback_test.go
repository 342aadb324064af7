package kubernetes_test

import (
	"context"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"

	"github.com/runner-dev/runner/internal/k8stest"
	"github.com/runner-dev/runner/sandbox"
	"github.com/runner-dev/runner/sandbox/kubernetes"
)

// upgradeProxy is a proxy in front of the API server that authenticates
// as the admin, counts the WebSocket and SPDY upgrades it sees, and
// refuses WebSocket ones when refuseWS is set.
type upgradeProxy struct {
	srv            *httptest.Server
	refuseWS       atomic.Bool
	ws, spdy, exec atomic.Int64
}

func newUpgradeProxy(t *testing.T) *upgradeProxy {
	t.Helper()
	rc, err := clientcmd.BuildConfigFromFlags("", k8stest.Kubeconfig(t))
	if err != nil {
		t.Fatal(err)
	}
	// HTTP/1.1 to the API server: an upgrade cannot cross HTTP/2.
	rc.TLSClientConfig.NextProtos = []string{"http/1.1"}
	tr, err := rest.TransportFor(rc)
	if err != nil {
		t.Fatal(err)
	}
	target, err := url.Parse(rc.Host)
	if err != nil {
		t.Fatal(err)
	}
	rp := httputil.NewSingleHostReverseProxy(target)
	rp.Transport = tr
	p := &upgradeProxy{}
	p.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		up := strings.ToLower(r.Header.Get("Upgrade"))
		if strings.HasSuffix(r.URL.Path, "/exec") {
			p.exec.Add(1)
		}
		switch {
		case up == "websocket":
			p.ws.Add(1)
			if p.refuseWS.Load() {
				http.Error(w, "this proxy does not pass WebSocket upgrades", http.StatusBadRequest)
				return
			}
		case strings.HasPrefix(up, "spdy"):
			p.spdy.Add(1)
		}
		rp.ServeHTTP(w, r)
	}))
	t.Cleanup(p.srv.Close)
	return p
}

// kubeconfig writes a kubeconfig that reaches the cluster through p.
func (p *upgradeProxy) kubeconfig(t *testing.T) string {
	t.Helper()
	cfg := clientcmdapi.NewConfig()
	cfg.Clusters["proxy"] = &clientcmdapi.Cluster{Server: p.srv.URL}
	cfg.AuthInfos["proxy"] = &clientcmdapi.AuthInfo{}
	cfg.Contexts["proxy"] = &clientcmdapi.Context{Cluster: "proxy", AuthInfo: "proxy"}
	cfg.CurrentContext = "proxy"
	path := t.TempDir() + "/kubeconfig"
	if err := clientcmd.WriteToFile(*cfg, path); err != nil {
		t.Fatal(err)
	}
	return path
}

// Exec goes over WebSocket, falls back to SPDY only when the upgrade is
// refused, and never runs a command twice: a non-zero exit is the
// command's answer, not a reason to try the other protocol.
func TestExecFallsBackToSPDYOnlyOnUpgradeFailure(t *testing.T) {
	p := newUpgradeProxy(t)
	opt := k8stest.Options(t)
	opt.Kubeconfig = p.kubeconfig(t)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	b, err := kubernetes.Connect(ctx, opt)
	if err != nil {
		t.Fatal(err)
	}
	sb := start(t, b, sandbox.Config{Network: "bridge"})

	count := `echo run >> /tmp/runs; wc -l < /tmp/runs; exit 3`
	ws0, spdy0 := p.ws.Load(), p.spdy.Load()
	res := run(t, sb, count, sandbox.ExecOptions{})
	if res.ExitCode != 3 || strings.TrimSpace(res.Stdout) != "1" {
		t.Errorf("over WebSocket: exit %d, runs %q; want exit 3 after one run", res.ExitCode, res.Stdout)
	}
	if ws, spdy := p.ws.Load()-ws0, p.spdy.Load()-spdy0; ws != 1 || spdy != 0 {
		t.Errorf("over WebSocket: %d WebSocket and %d SPDY upgrades, want 1 and 0", ws, spdy)
	}

	p.refuseWS.Store(true)
	ws0, spdy0 = p.ws.Load(), p.spdy.Load()
	res, err = sb.Exec(ctx, count, sandbox.ExecOptions{})
	if err != nil {
		t.Fatalf("Exec with WebSocket refused (%d WebSocket, %d SPDY upgrades seen): %v", p.ws.Load()-ws0, p.spdy.Load()-spdy0, err)
	}
	if res.ExitCode != 3 || strings.TrimSpace(res.Stdout) != "2" {
		t.Errorf("after the fallback: exit %d, runs %q; want exit 3 after the second run", res.ExitCode, res.Stdout)
	}
	if ws, spdy := p.ws.Load()-ws0, p.spdy.Load()-spdy0; ws != 1 || spdy != 1 {
		t.Errorf("with WebSocket refused: %d WebSocket and %d SPDY upgrades, want 1 and 1", ws, spdy)
	}
	// The file tools, with data on stdin and stdout, too.
	if err := sb.WriteFile(ctx, "f.txt", []byte("over spdy\n"), 0); err != nil {
		t.Fatalf("WriteFile over SPDY: %v", err)
	}
	if got, err := sb.ReadFile(ctx, "f.txt"); err != nil || string(got) != "over spdy\n" {
		t.Errorf("ReadFile over SPDY: %q, %v", got, err)
	}
}
