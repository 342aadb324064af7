package tasks

import (
	"net/url"
	"regexp"
	"strings"
)

// credentialPatterns recognise well-known credential formats in env values.
// Secrets must not reach the sandbox, where the agent could read or leak
// them; the runner passes the model's key from the host instead.
var credentialPatterns = []struct {
	kind string
	re   *regexp.Regexp
}{
	{"an API key (sk-...)", regexp.MustCompile(`\bsk-[A-Za-z0-9_-]{16,}`)},
	{"a GitHub token", regexp.MustCompile(`\b(gh[pousr]_[A-Za-z0-9]{20,}|github_pat_[A-Za-z0-9_]{20,})`)},
	{"an AWS access key", regexp.MustCompile(`\b(AKIA|ASIA)[0-9A-Z]{16}\b`)},
	{"a GitLab token", regexp.MustCompile(`\bglpat-[A-Za-z0-9_-]{20,}`)},
	{"a Slack token", regexp.MustCompile(`\bxox[abposr]-[A-Za-z0-9-]{10,}`)},
	{"a Google API key", regexp.MustCompile(`\bAIza[0-9A-Za-z_-]{35}`)},
	{"a private key", regexp.MustCompile(`-----BEGIN [A-Z ]*PRIVATE KEY-----`)},
}

// credentialKind names the kind of credential value looks like, or "".
func credentialKind(value string) string {
	for _, p := range credentialPatterns {
		if p.re.MatchString(value) {
			return p.kind
		}
	}
	return ""
}

// RedactRepo hides the credentials a repository URL may carry, so that it
// can be written to results and logs: a password becomes "xxxxx", and so does
// the user name of an http(s) URL, where it is commonly a token. Local paths
// and scp-like addresses (git@host:path) are returned unchanged.
func RedactRepo(repo string) string {
	if !strings.Contains(repo, "://") {
		return repo
	}
	u, err := url.Parse(repo)
	if err != nil {
		// Unparseable: drop everything between the scheme and the last '@'
		// of the authority rather than risk printing a secret.
		scheme, rest, _ := strings.Cut(repo, "://")
		authority, path, hasPath := strings.Cut(rest, "/")
		if at := strings.LastIndexByte(authority, '@'); at >= 0 {
			authority = "xxxxx" + authority[at:]
		}
		if hasPath {
			return scheme + "://" + authority + "/" + path
		}
		return scheme + "://" + authority
	}
	if u.User == nil {
		return repo
	}
	name := u.User.Username()
	_, hasPassword := u.User.Password()
	switch {
	case u.Scheme == "http" || u.Scheme == "https":
		if hasPassword {
			u.User = url.UserPassword(name, "xxxxx")
		} else {
			u.User = url.User("xxxxx")
		}
	case hasPassword:
		u.User = url.UserPassword(name, "xxxxx")
	default:
		return repo
	}
	return u.String()
}

// urlUserinfo matches the authority part of URLs inside free text.
var urlUserinfo = regexp.MustCompile(`[A-Za-z][A-Za-z0-9+.-]*://[^\s/@]+@[^\s]*`)

// redactText applies RedactRepo to every URL with credentials in s, such as
// the ones git prints in its error messages.
func redactText(s string) string {
	return urlUserinfo.ReplaceAllStringFunc(s, RedactRepo)
}
