package redact

import (
	"net/url"
	"regexp"
	"strings"
)

// URL returns rawURL without the credentials it may carry, fit to be
// stored (as a remote URL, as the repository of a result) or printed.
//
// For http(s) the whole user-info part is dropped, because a token is
// often passed as the user name (https://TOKEN@host/repo.git); the
// credentials go in the request's authentication instead. For other
// schemes (ssh, git...) the user name is kept, since ssh needs it and it
// is not a secret, and only a password is dropped. Scp-like addresses
// (git@host:repo.git) keep their user; a "user:password@" prefix loses
// its password. Local paths are returned unchanged. The string is
// otherwise kept byte for byte, including addresses url.Parse refuses.
func URL(rawURL string) string {
	scheme, rest, ok := strings.Cut(rawURL, "://")
	if !ok {
		return scpLike(rawURL)
	}
	// The authority ends at the first '/', '?' or '#'; user info ends at
	// its last '@'.
	end := strings.IndexAny(rest, "/?#")
	if end < 0 {
		end = len(rest)
	}
	at := strings.LastIndexByte(rest[:end], '@')
	if at < 0 {
		return rawURL
	}
	return scheme + "://" + userinfo(scheme, rest[:at]) + rest[at+1:]
}

// userinfo is what URL keeps of the user info of a URL of scheme: the
// user name and its '@' for schemes other than http(s), else nothing.
func userinfo(scheme, info string) string {
	switch strings.ToLower(scheme) {
	case "http", "https":
		return ""
	}
	user, _, _ := strings.Cut(info, ":")
	return user + "@"
}

// scpLike drops a password from "user:password@host:path".
func scpLike(s string) string {
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

// URLSecrets returns the credentials embedded in rawURL: its password, or
// for an http(s) URL without one the user name, which is then a token
// (https://TOKEN@host); each as written and percent-decoded. A user name
// beside a password is a name, not a secret (URL still removes it from
// http(s) URLs).
func URLSecrets(rawURL string) []string {
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
		if at := strings.IndexByte(rawURL, '@'); at >= 0 && !strings.ContainsAny(rawURL[:at], "/") {
			_, password, _ := strings.Cut(rawURL[:at], ":")
			add(password)
		}
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
	if s := strings.ToLower(scheme); (s == "http" || s == "https") && password == "" {
		add(user) // a token passed as the user name
	}
	return secrets
}

// urlInText matches the start of a URL with user info inside free text
// (a git error, a command's output, a line of JSON): the scheme and the
// user info up to its last '@'. User info is made of the characters RFC
// 3986 allows in it (and the brackets of a Mask already there), so a
// match never runs past a quote, a space or the end of a JSON string.
var urlInText = regexp.MustCompile(`\b([A-Za-z][A-Za-z0-9+.\-]*)://([A-Za-z0-9\-._~%!$&'()*+,;=:@\[\]]+)@`)

// urlsInText applies URL to every URL with user info in s.
func urlsInText(s string) string {
	matches := urlInText.FindAllStringSubmatchIndex(s, -1)
	if matches == nil {
		return s
	}
	var b strings.Builder
	last := 0
	for _, m := range matches {
		scheme, info := s[m[2]:m[3]], s[m[4]:m[5]]
		b.WriteString(s[last:m[0]])
		b.WriteString(scheme + "://" + userinfo(scheme, info))
		last = m[1]
	}
	b.WriteString(s[last:])
	return b.String()
}
