package docker_test

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"math/big"
	"strings"
	"testing"
	"time"

	"github.com/moby/moby/api/types/container"
	"github.com/moby/moby/client"

	"github.com/runner-dev/runner/internal/dockertest"
	"github.com/runner-dev/runner/sandbox"
)

// testCA makes a CA of the test's own and a server certificate it signs
// for host; all in PEM.
func testCA(t *testing.T, host string) (caPEM, certPEM, keyPEM string) {
	t.Helper()
	caKey, _ := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	ca := &x509.Certificate{SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "runner test CA"},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour),
		IsCA: true, BasicConstraintsValid: true, KeyUsage: x509.KeyUsageCertSign}
	caDER, err := x509.CreateCertificate(rand.Reader, ca, ca, &caKey.PublicKey, caKey)
	if err != nil {
		t.Fatal(err)
	}
	key, _ := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	leaf := &x509.Certificate{SerialNumber: big.NewInt(2), Subject: pkix.Name{CommonName: host}, DNSNames: []string{host},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour),
		KeyUsage: x509.KeyUsageDigitalSignature, ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth}}
	der, err := x509.CreateCertificate(rand.Reader, leaf, ca, &key.PublicKey, caKey)
	if err != nil {
		t.Fatal(err)
	}
	kder, _ := x509.MarshalECPrivateKey(key)
	enc := func(typ string, b []byte) string { return string(pem.EncodeToMemory(&pem.Block{Type: typ, Bytes: b})) }
	return enc("CERTIFICATE", caDER), enc("CERTIFICATE", der), enc("EC PRIVATE KEY", kder)
}

// tlsServer runs openssl s_server with cert and key in a container of
// image on the default bridge network, until the end of the test, and
// returns its address.
func tlsServer(t *testing.T, image, certPEM, keyPEM string) string {
	t.Helper()
	c := dockertest.Client(t)
	ctx := context.Background()
	created, err := c.ContainerCreate(ctx, client.ContainerCreateOptions{
		Config: &container.Config{Image: image, Labels: map[string]string{dockertest.LabelTest: "1"}, User: "0:0",
			Cmd: []string{"sh", "-c", `printf %s "$0" > /tmp/c.pem && printf %s "$1" > /tmp/k.pem && exec openssl s_server -quiet -accept 443 -cert /tmp/c.pem -key /tmp/k.pem -www`, certPEM, keyPEM}},
		HostConfig: &container.HostConfig{NetworkMode: "bridge"},
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
	return res.Container.NetworkSettings.Networks["bridge"].IPAddress.String()
}

// With ca_certs, a real client in the sandbox trusts a server whose CA
// only the test knows; without, the same client refuses it. The bundle
// keeps the image's own certificates and the sandbox user cannot change
// it.
func TestCACertsAreTrustedInTheSandbox(t *testing.T) {
	image := dockertest.Debian(t, dockertest.SandboxPackages(t)...)
	const host = "tls.runner.test"
	caPEM, certPEM, keyPEM := testCA(t, host)
	addr := tlsServer(t, image, certPEM, keyPEM)
	url := "https://" + host + "/"
	curl := "curl -sS -o /dev/null --max-time 10 --resolve " + host + ":443:" + addr + " " + url
	git := "git -c http.curloptResolve=" + host + ":443:" + addr + " ls-remote " + url
	// Wait until the server answers (any TLS answer: trusted or not).
	wait := `for i in $(seq 100); do ` + curl + ` -k 2>/dev/null && break; sleep 0.2; done; `

	with := start(t, sandbox.Config{Image: image, Network: "bridge", CACerts: []byte(caPEM)})
	got := output(t, with, wait+curl+`; echo "curl=$?"; `+git+` 2>&1 | grep -cE 'certificate (verification failed|problem)'; `+
		`grep -c 'BEGIN CERTIFICATE' "$SSL_CERT_FILE" | awk '{print ($1 > 100)}'; if (echo x >> "$SSL_CERT_FILE") 2>/dev/null; then echo written; else echo refused; fi; `+
		`echo "$NODE_EXTRA_CA_CERTS $GIT_SSL_CAINFO $REQUESTS_CA_BUNDLE"`)
	want := "curl=0\n0\n1\nrefused\n" + strings.Repeat(sandbox.CABundle+" ", 2) + sandbox.CABundle
	if got != want {
		t.Errorf("with ca_certs:\n%s\nwant:\n%s", got, want)
	}

	without := start(t, sandbox.Config{Image: image, Network: "bridge"})
	got = output(t, without, wait+curl+` 2>/dev/null; echo "curl=$?"; `+git+` 2>&1 | grep -cE 'certificate (verification failed|problem)'; test -e `+sandbox.CABundle+`; echo "bundle=$?"`)
	if want := "curl=60\n1\nbundle=1"; got != want { // 60: the peer's certificate cannot be verified
		t.Errorf("without ca_certs:\n%s\nwant:\n%s", got, want)
	}
}
