// Package redact removes secrets from text before it is stored or shown:
// the values the runner knows to be secret (API keys, tokens) and anything
// shaped like a well-known credential.
package redact

import (
	"regexp"
	"sort"
	"strings"
)

// Mask replaces every secret.
const Mask = "[REDACTED]"

// credentialShapes match common credential formats, so that a secret the
// runner was not told about (one printed by a command, say) is still hidden.
var credentialShapes = regexp.MustCompile(strings.Join([]string{
	`sk-[A-Za-z0-9_\-]{16,}`,                 // OpenAI and compatible keys
	`sk-ant-[A-Za-z0-9_\-]{16,}`,             // Anthropic
	`gh[pousr]_[A-Za-z0-9]{30,}`,             // GitHub tokens
	`github_pat_[A-Za-z0-9_]{30,}`,           // GitHub fine-grained tokens
	`glpat-[A-Za-z0-9_\-]{20,}`,              // GitLab
	`xox[baprs]-[A-Za-z0-9\-]{10,}`,          // Slack
	`AKIA[0-9A-Z]{16}`,                       // AWS access key ids
	`AIza[0-9A-Za-z_\-]{35}`,                 // Google API keys
	`(?i)bearer\s+[A-Za-z0-9._~+/\-]{20,}=*`, // bearer headers
	`(?i)(https?://)[^/\s:@]+:[^/\s@]+@`,     // credentials in URLs
	`-----BEGIN [A-Z ]*PRIVATE KEY-----[\s\S]*?-----END [A-Z ]*PRIVATE KEY-----`,
}, "|"))

// Redactor hides a fixed set of secret values and credential shapes.
// The zero value hides shapes only. It is safe for concurrent use once
// built.
type Redactor struct {
	secrets []string // longest first, so a secret inside another goes too
}

// New returns a Redactor for the given secret values; empty values and
// values shorter than 6 bytes (too likely to occur by chance) are ignored.
func New(secrets ...string) *Redactor {
	r := &Redactor{}
	for _, s := range secrets {
		if len(s) >= 6 {
			r.secrets = append(r.secrets, s)
		}
	}
	sort.Slice(r.secrets, func(i, j int) bool { return len(r.secrets[i]) > len(r.secrets[j]) })
	return r
}

// String returns s with every secret replaced by Mask.
func (r *Redactor) String(s string) string {
	if r != nil {
		for _, secret := range r.secrets {
			s = strings.ReplaceAll(s, secret, Mask)
		}
	}
	return credentialShapes.ReplaceAllStringFunc(s, func(m string) string {
		if sub := credentialShapes.FindStringSubmatch(m); len(sub) > 1 && sub[1] != "" {
			return sub[1] + Mask + "@" // keep the scheme of a URL
		}
		return Mask
	})
}
