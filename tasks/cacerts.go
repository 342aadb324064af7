package tasks

import (
	"bytes"
	"crypto/x509"
	"encoding/pem"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"

	"go.yaml.in/yaml/v3"
)

// HostCABundle is the host's system bundle of trusted certificates, what
// `ca_certs: host` names (Debian, Ubuntu and Alpine keep it here).
var HostCABundle = "/etc/ssl/certs/ca-certificates.crt"

// maxCAFile caps one file of ca_certs.
const maxCAFile = 8 << 20

// decodeCACerts reads ca_certs: a file of PEM certificates, `host`, or a
// list of them. Each file is read now, relative to the task file, and
// must hold certificates only: at least one, each parsed; a private key
// or any other PEM block is refused, so that nothing but certificates
// reaches the sandbox. The certificates are kept re-encoded, in order,
// without duplicates.
func decodeCACerts(r *reader, v *yaml.Node, a at, s *spec) {
	nodes := []*yaml.Node{v}
	if v.Kind == yaml.SequenceNode {
		if _, ok := r.strList(v, a, "PEM files or host", func(string) error { return nil }); !ok {
			return
		}
		nodes = v.Content
	}
	var names []string
	for _, n := range nodes {
		name, ok := r.str(resolve(n), a)
		if !ok {
			return
		}
		names = append(names, name)
	}
	var bundle []byte
	seen := map[string]bool{}
	for i, name := range names {
		file, at := name, resolve(nodes[i])
		switch {
		case name == "host":
			file = HostCABundle
		case name == "":
			r.addField(at, a, "an empty file name: want a PEM file or host")
			return
		case !filepath.IsAbs(name):
			file = filepath.Join(r.dir, name)
		}
		certs, err := readCACerts(file)
		if err != nil {
			r.addField(at, a, "%v", err)
			return
		}
		for _, c := range certs {
			if !seen[string(c)] {
				seen[string(c)] = true
				bundle = append(bundle, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: c})...)
			}
		}
	}
	if len(names) == 0 {
		bundle = []byte{} // ca_certs: [] turns the defaults' off
	}
	s.CACerts = &bundle
}

// readCACerts returns the DER certificates of the PEM file name, or an
// error naming the file (and the line of a bad block).
func readCACerts(name string) ([][]byte, error) {
	f, err := os.Open(name)
	if err != nil {
		return nil, fmt.Errorf("%w", err)
	}
	defer f.Close()
	if st, err := f.Stat(); err != nil || !st.Mode().IsRegular() {
		return nil, fmt.Errorf("%s is not a regular file", name)
	}
	data, err := io.ReadAll(io.LimitReader(f, maxCAFile+1))
	if err != nil {
		return nil, fmt.Errorf("read %s: %w", name, err)
	}
	if len(data) > maxCAFile {
		return nil, fmt.Errorf("%s is over %d MiB", name, maxCAFile>>20)
	}
	var certs [][]byte
	rest := data
	for {
		before := rest
		block, after := pem.Decode(rest)
		if block == nil {
			break
		}
		line := 1 + bytes.Count(data[:len(data)-len(before)], []byte("\n")) + leadingLines(before)
		rest = after
		if block.Type != "CERTIFICATE" {
			return nil, fmt.Errorf("%s:%d: a %q block: want certificates only", name, line, block.Type)
		}
		if _, err := x509.ParseCertificate(block.Bytes); err != nil {
			return nil, fmt.Errorf("%s:%d: not a valid certificate: %v", name, line, err)
		}
		certs = append(certs, block.Bytes)
	}
	if bytes.Contains(rest, []byte("-----BEGIN")) {
		line := 1 + bytes.Count(data[:len(data)-len(rest)], []byte("\n")) + leadingLines(rest)
		return nil, fmt.Errorf("%s:%d: a PEM block that cannot be read", name, line)
	}
	if len(certs) == 0 {
		return nil, fmt.Errorf("%s: %w", name, errNoCertificates)
	}
	return certs, nil
}

var errNoCertificates = errors.New("no PEM certificate in the file")

// leadingLines counts the lines before the first "-----BEGIN" of b.
func leadingLines(b []byte) int {
	if i := bytes.Index(b, []byte("-----BEGIN")); i > 0 {
		return bytes.Count(b[:i], []byte("\n"))
	}
	return 0
}
