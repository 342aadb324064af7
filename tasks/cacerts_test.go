package tasks

import (
	"bytes"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"math/big"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// testCert returns a self-signed CA certificate in PEM, and its key.
func testCert(t *testing.T, name string) (certPEM, keyPEM []byte) {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: name},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour), IsCA: true, BasicConstraintsValid: true}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		t.Fatal(err)
	}
	kder, _ := x509.MarshalECPrivateKey(key)
	return pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}), pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: kder})
}

func TestCACerts(t *testing.T) {
	dir := t.TempDir()
	a, _ := testCert(t, "a")
	b, _ := testCert(t, "b")
	os.WriteFile(filepath.Join(dir, "a.pem"), append([]byte("# the proxy's CA\n"), a...), 0o644)
	os.WriteFile(filepath.Join(dir, "ab.pem"), append(append([]byte{}, b...), a...), 0o644)
	old := HostCABundle
	HostCABundle = filepath.Join(dir, "ab.pem")
	t.Cleanup(func() { HostCABundle = old })
	q, err := Parse(filepath.Join(dir, "q.yaml"), []byte(`
defaults:
  repo: /r
  ca_certs: a.pem
tasks:
  - {id: one, prompt: p}
  - {id: two, prompt: p, ca_certs: [a.pem, host]}
  - {id: off, prompt: p, ca_certs: []}
`))
	if err != nil {
		t.Fatal(err)
	}
	want := map[string][]byte{"one": a, "two": append(append([]byte{}, a...), b...), "off": nil}
	for _, tk := range q.Tasks {
		if !bytes.Equal(tk.CACerts, want[tk.ID]) {
			t.Errorf("task %s: CACerts =\n%s\nwant\n%s", tk.ID, tk.CACerts, want[tk.ID])
		}
	}
}

func TestCACertsMistakes(t *testing.T) {
	dir := t.TempDir()
	cert, key := testCert(t, "a")
	files := map[string][]byte{
		"key.pem":     append(append([]byte{}, cert...), key...),
		"empty.pem":   []byte("no certificates here\n"),
		"broken.pem":  []byte("# comment\n\n-----BEGIN CERTIFICATE-----\nbm90IGEgY2VydA==\n-----END CERTIFICATE-----\n"),
		"cut.pem":     append(append([]byte{}, cert...), "-----BEGIN CERTIFICATE-----\nMIIB\n"...),
		"dir.pem/x":   nil,
		"present.pem": cert,
	}
	for name, body := range files {
		os.MkdirAll(filepath.Dir(filepath.Join(dir, name)), 0o755)
		if body != nil {
			os.WriteFile(filepath.Join(dir, name), body, 0o644)
		}
	}
	name := filepath.Join(dir, "q.yaml")
	_, lines := parseProblems(t, name, `
tasks:
  - {id: a, repo: /r, prompt: p, ca_certs: key.pem}
  - {id: b, repo: /r, prompt: p, ca_certs: empty.pem}
  - {id: c, repo: /r, prompt: p, ca_certs: [present.pem, broken.pem]}
  - {id: d, repo: /r, prompt: p, ca_certs: cut.pem}
  - {id: e, repo: /r, prompt: p, ca_certs: missing.pem}
  - {id: f, repo: /r, prompt: p, ca_certs: dir.pem}
  - {id: g, repo: /r, prompt: p, ca_certs: {a: b}}
`)
	certLines := strings.Count(string(cert), "\n")
	want := []string{
		name + `:3:44: task "a": ca_certs: ` + filepath.Join(dir, "key.pem") + `:` + itoa(certLines+1) + `: a "EC PRIVATE KEY" block: want certificates only`,
		name + `:4:44: task "b": ca_certs: ` + filepath.Join(dir, "empty.pem") + `: no PEM certificate in the file`,
		name + `:5:58: task "c": ca_certs: ` + filepath.Join(dir, "broken.pem") + `:3: not a valid certificate: `,
		name + `:6:44: task "d": ca_certs: ` + filepath.Join(dir, "cut.pem") + `:` + itoa(certLines+1) + `: a PEM block that cannot be read`,
		name + `:7:44: task "e": ca_certs: open ` + filepath.Join(dir, "missing.pem") + `: no such file or directory`,
		name + `:8:44: task "f": ca_certs: ` + filepath.Join(dir, "dir.pem") + ` is not a regular file`,
		name + `:9:44: task "g": ca_certs: want a string, got a mapping`,
	}
	if len(lines) != len(want) {
		assertLines(t, lines, want)
		return
	}
	for i := range want {
		if !strings.HasPrefix(lines[i], want[i]) {
			t.Errorf("line %d:\n got %s\nwant %s...", i+1, lines[i], want[i])
		}
	}
}

func itoa(n int) string { return big.NewInt(int64(n)).String() }
