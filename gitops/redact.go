package gitops

import (
	"net/url"
	"slices"
	"strings"
)

// RedactURL returns rawURL without the secrets it may embed, fit to be
// stored (as a remote URL) or printed.
//
// For http(s) the whole user-info part is dropped, because a token is often
// passed as the user name (https://TOKEN@host/repo.git). For other schemes
// (ssh, git, ...) the user name is kept, since ssh needs it and it is not a
// secret, and only a password is dropped. Local paths and scp-like addresses
// (git@host:repo.git) keep their user; a "user:password@" prefix loses its
// password. The string is otherwise left as written.
func RedactURL(rawURL string) string {
	scheme, rest, ok := strings.Cut(rawURL, "://")
	if !ok {
		return redactSCPLike(rawURL)
	}
	// The authority ends at the first '/', '?' or '#'; user info ends at its
	// last '@'. Working on the string rather than url.URL keeps the rest of
	// the address byte for byte and copes with addresses url.Parse refuses.
	end := strings.IndexAny(rest, "/?#")
	if end < 0 {
		end = len(rest)
	}
	authority := rest[:end]
	at := strings.LastIndexByte(authority, '@')
	if at < 0 {
		return rawURL
	}
	userinfo, host := authority[:at], authority[at+1:]
	switch strings.ToLower(scheme) {
	case "http", "https":
		return scheme + "://" + host + rest[end:]
	default:
		user, _, _ := strings.Cut(userinfo, ":")
		return scheme + "://" + user + "@" + host + rest[end:]
	}
}

// redactSCPLike drops a password from "user:password@host:path".
func redactSCPLike(s string) string {
	at := strings.IndexByte(s, '@')
	if at < 0 || strings.ContainsAny(s[:at], "/") {
		return s
	}
	user, _, hasPassword := strings.Cut(s[:at], ":")
	if !hasPassword {
		return s
	}
	return user + s[at:]
}

// urlSecrets returns the credentials embedded in rawURL (user name of an
// http(s) URL, any password), in the raw and the percent-decoded spelling.
func urlSecrets(rawURL string) []string {
	var secrets []string
	add := func(s string) {
		if s == "" {
			return
		}
		secrets = append(secrets, s)
		if dec, err := url.PathUnescape(s); err == nil && dec != s {
			secrets = append(secrets, dec)
		}
	}
	scheme, rest, ok := strings.Cut(rawURL, "://")
	if !ok {
		return secrets
	}
	end := strings.IndexAny(rest, "/?#")
	if end < 0 {
		end = len(rest)
	}
	at := strings.LastIndexByte(rest[:end], '@')
	if at < 0 {
		return secrets
	}
	user, password, _ := strings.Cut(rest[:at], ":")
	add(password)
	if s := strings.ToLower(scheme); s == "http" || s == "https" {
		add(user)
	}
	return secrets
}

// scrubbedError hides secrets from an error message while keeping the
// wrapped error for errors.Is and errors.As.
type scrubbedError struct {
	msg string
	err error
}

func (e *scrubbedError) Error() string { return e.msg }
func (e *scrubbedError) Unwrap() error { return e.err }

// scrub returns err with every secret replaced by "***" in its message.
// Longer secrets are replaced first so that one containing another is hidden
// as a whole. Secrets shorter than 3 bytes are left alone: replacing them
// would garble the message without protecting anything real.
func scrub(err error, secrets ...string) error {
	if err == nil {
		return nil
	}
	msg := err.Error()
	clean := msg
	for _, s := range sortedByLength(secrets) {
		if len(s) >= 3 {
			clean = strings.ReplaceAll(clean, s, "***")
		}
	}
	if clean == msg {
		return err
	}
	return &scrubbedError{msg: clean, err: err}
}

func sortedByLength(ss []string) []string {
	out := slices.Clone(ss)
	slices.SortStableFunc(out, func(a, b string) int { return len(b) - len(a) })
	return out
}
