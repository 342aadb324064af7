package agent

import (
	"crypto/tls"
	"crypto/x509"
	"errors"
	"net"
	"net/http"
	"syscall"
)

// mayHaveBeenBilled reports whether a failed model attempt may have been
// billed. A provider bills the work its model does, and a client cannot see
// how far a failed attempt got, so an attempt counts as unbilled only when
// its failure shows that the model never ran:
//
//   - the request was never sent: the connection could not be made (refused,
//     no route, a name that does not resolve, a TLS handshake or certificate
//     refused);
//   - the API refused it with a 4xx status other than 408 (authentication,
//     permission, quota, rate limit, an invalid request, a prompt over the
//     context window, an unknown model), which it does before the model runs.
//
// Everything else may have been billed and is charged at its bound: a
// timeout, a connection reset or closed after the request was sent, a 408,
// any 5xx (a gateway answers 502 or 504 after the model behind it has
// worked), a success whose body is not a usable completion, and an attempt
// in flight when the caller gave up.
func mayHaveBeenBilled(err error) bool {
	if err == nil {
		return false
	}
	var me *ModelError
	if errors.As(err, &me) {
		return me.StatusCode < 400 || me.StatusCode == http.StatusRequestTimeout || me.StatusCode >= 500
	}
	return !neverSent(err)
}

// neverSent reports whether err shows that the request never left: it
// could not be built, or the connection or its TLS handshake failed.
func neverSent(err error) bool {
	var op *net.OpError
	if errors.As(err, &op) && op.Op == "dial" {
		return true
	}
	var dns *net.DNSError
	var cert *tls.CertificateVerificationError
	var header tls.RecordHeaderError
	var unknown x509.UnknownAuthorityError
	var host x509.HostnameError
	var before notSent
	return errors.As(err, &before) || errors.As(err, &dns) || errors.As(err, &cert) || errors.As(err, &header) ||
		errors.As(err, &unknown) || errors.As(err, &host) || errors.Is(err, syscall.ECONNREFUSED)
}

// notSent marks a failure that came before the request was sent: it could
// not be built or encoded.
type notSent struct{ error }

func (e notSent) Unwrap() error { return e.error }
