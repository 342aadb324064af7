package redact

import (
	"regexp"
	"strings"
)

// credential is one well-known credential format: what it is called in a
// message, and how it is recognised.
type credential struct {
	kind    string
	pattern string
}

// pemBody matches the inside of a PEM block, raw or as spelled inside a
// JSON string (its line ends written \n): the block is masked even when
// its end was cut off (a truncated command output), and never past a
// quote.
const pemBody = `(?:[A-Za-z0-9+/=\s:,\-]|\\[nr])*`

// credentials is the one table of credential shapes: String masks them
// wherever they appear, so that a secret runner was not told about (one a
// command printed, say) is still hidden, and Kind names them, so that a
// task file cannot hand one to the sandbox. Order matters for Kind only:
// the first match names the value. Each entry has its test case in
// credentials_test.go.
var credentials = []credential{
	{"an API key (sk-...)", `\bsk-[A-Za-z0-9_\-]{16,}`},                // OpenAI (sk-, sk-proj-), Anthropic (sk-ant-), compatibles
	{"a masked API key", `\bsk-[A-Za-z0-9_\-]{2,}\*+[A-Za-z0-9_*\-]*`}, // as an API's error message prints it
	{"a GitHub token", `\bgh[pousr]_[A-Za-z0-9]{20,}`},
	{"a GitHub fine-grained token", `\bgithub_pat_[A-Za-z0-9_]{20,}`},
	{"a GitLab token", `\bglpat-[A-Za-z0-9_\-]{20,}`},
	{"a Slack token", `\bxox[abposr]-[A-Za-z0-9\-]{10,}`},
	{"an AWS access key", `\b(?:AKIA|ASIA)[0-9A-Z]{16}\b`},
	{"a Google API key", `\bAIza[0-9A-Za-z_\-]{35,}`},
	{"a private key", `-----BEGIN [A-Z ]*PRIVATE KEY-----(?:` + pemBody + `?-----END [A-Z ]*PRIVATE KEY-----|` + pemBody + `)`},
	{"a bearer token", `(?i)\bbearer\s+[A-Za-z0-9._~+/\-]{20,}=*`},
	{"an HTTP basic authorization", `(?i)\bauthorization:\s*basic\s+[A-Za-z0-9+/]+=*`},
}

var (
	// credentialShapes matches any entry of the table.
	credentialShapes = func() *regexp.Regexp {
		alts := make([]string, len(credentials))
		for i, c := range credentials {
			alts[i] = "(?:" + c.pattern + ")"
		}
		return regexp.MustCompile(strings.Join(alts, "|"))
	}()
	// credentialREs are the entries of the table, compiled one by one.
	credentialREs = func() []*regexp.Regexp {
		res := make([]*regexp.Regexp, len(credentials))
		for i, c := range credentials {
			res[i] = regexp.MustCompile(c.pattern)
		}
		return res
	}()
)

// Kind names the kind of credential s holds ("a GitHub token"), or ""
// when it holds none the table knows.
func Kind(s string) string {
	for i, re := range credentialREs {
		if re.MatchString(s) {
			return credentials[i].kind
		}
	}
	return ""
}
