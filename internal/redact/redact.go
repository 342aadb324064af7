// Package redact removes secrets from text before it is stored or shown:
// the values runner knows to be secret (the API key, git tokens, the
// variables named by --secret-env, credentials inside repository URLs),
// anything shaped like a well-known credential (the table in
// credentials.go), and the credentials inside URLs (URL). It is the only
// place runner does so: trajectories, results, commit messages, git and
// model errors all go through it, with the one mask, Mask.
package redact

import (
	"errors"
	"fmt"
	"slices"
	"strings"
	"unicode/utf8"
)

// Mask replaces every secret.
const Mask = "[REDACTED]"

// MinSecretLen is the fewest characters a configured secret may have.
// A secret is hidden by replacing each of its occurrences, and a short
// value occurs everywhere by chance: masking "a" would mangle every log,
// "main" every branch name, and the gaps left would tell where the value
// was. A value short enough to occur by chance is also short enough to be
// guessed, so masking it would not keep it secret either. Eight characters
// is the least a password manager or a token issuer hands out; the
// credential formats of the table are all longer.
const MinSecretLen = 8

// ErrTooShort is returned by CheckSecret for a value shorter than
// MinSecretLen.
var ErrTooShort = errors.New("too short to be hidden safely")

// CheckSecret refuses a configured secret that cannot be hidden: one
// shorter than MinSecretLen characters. The caller names where the value
// came from; an empty value (a variable not set) is the caller's call.
func CheckSecret(value string) error {
	if n := utf8.RuneCountInString(value); n < MinSecretLen {
		return fmt.Errorf("%w: %d characters, fewer than %d (masking a value that short would mask ordinary text everywhere)",
			ErrTooShort, n, MinSecretLen)
	}
	return nil
}

// Redactor hides a fixed set of secret values, the credentials inside
// URLs and the credential shapes of the table. The zero value and a nil
// *Redactor hide URLs and shapes only. It is safe for concurrent use.
type Redactor struct {
	secrets []string // longest first, so a secret inside another goes too
}

// New returns a Redactor for the given secret values. Values shorter than
// MinSecretLen are left out: configuration refuses them first
// (CheckSecret), and the ones that reach New regardless (an empty token)
// are not secrets worth mangling every text for.
func New(secrets ...string) *Redactor {
	r := &Redactor{}
	for _, s := range secrets {
		if utf8.RuneCountInString(s) >= MinSecretLen {
			r.secrets = append(r.secrets, s)
		}
	}
	slices.SortStableFunc(r.secrets, func(a, b string) int { return len(b) - len(a) })
	r.secrets = slices.Compact(r.secrets)
	return r
}

// String returns s with the credentials of its URLs removed (see URL),
// then every secret value and every credential shape replaced by Mask.
// s is text; for a JSON document, where a secret may be spelled with
// escapes, use JSON.
func (r *Redactor) String(s string) string {
	s = urlsInText(s)
	if r != nil {
		for _, secret := range r.secrets {
			s = strings.ReplaceAll(s, secret, Mask)
		}
	}
	return credentialShapes.ReplaceAllString(s, Mask)
}

// Error returns err with its message redacted by String. errors.Is and
// errors.As still see the original chain; only the text changes.
func (r *Redactor) Error(err error) error {
	if err == nil {
		return nil
	}
	text := err.Error()
	if clean := r.String(text); clean != text {
		return &redactedError{text: clean, err: err}
	}
	return err
}

type redactedError struct {
	text string
	err  error
}

func (e *redactedError) Error() string { return e.text }
func (e *redactedError) Unwrap() error { return e.err }
