package redact

import (
	"regexp"
	"testing"
)

// shapeCases holds, for every kind of the table, credentials of that kind
// that no other entry matches, so that removing or weakening an entry
// fails this test. The values are made up.
var shapeCases = map[string][]string{
	"an API key (sk-...)": {
		"sk-" + "abcdefghijklmnopqrstuvwxyz012345",
		"sk-proj-" + "AbCdEfGhIjKlMnOpQrStUvWx_0123-456",
		"sk-ant-api03-" + "abcdefghijklmnopqrstu_vwxyz-0123",
	},
	"a masked API key": {
		"sk-proj-" + "****************************************ab12",
		"sk-canar" + "****-123",
	},
	"a GitHub token": {
		"ghp_" + "abcdefghijklmnopqrstuvwxyz0123456789",
		"gho_" + "ABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789",
		"ghs_" + "0123456789abcdefghijABCDEFGHIJ012345",
		"ghu_" + "abcdefghijklmnopqrst",
		"ghr_" + "abcdefghijklmnopqrstuvwxyz",
	},
	"a GitHub fine-grained token": {
		"github_pat_" + "11ABCDEFG0123456789_abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ012345678",
	},
	"a GitLab token": {"glpat-" + "abcdefghij-KLMNOPQRST_uv"},
	"a Slack token": {
		"xoxb-" + "123456789012-1234567890123-AbCdEfGhIjKlMnOpQrStUvWx",
		"xoxp-" + "1234567890-abcdef",
		"xoxa-" + "2-abcdefghijkl", "xoxr-" + "abcdefghijkl", "xoxs-" + "abcdefghijkl", "xoxo-" + "abcdefghijkl",
	},
	"an AWS access key": {"AKIA" + "IOSFODNN7EXAMPLE", "ASIA" + "ABCDEFGHIJKLMNOP"},
	"a Google API key":  {"AIza" + "SyA-abcdefghijklmnopqrstuvwxyz01234"},
	"a private key": {
		"-----BEGIN OPENSSH PRIVATE KEY-----\nb3BlbnNzaC1rZXktdjEAAAAABG5vbmUAAAAEbm9uZQ==\n-----END OPENSSH PRIVATE KEY-----",
		"-----BEGIN RSA PRIVATE KEY-----\nProc-Type: 4,ENCRYPTED\nDEK-Info: AES-128-CBC,0A1B\n\nMIIEow\n-----END RSA PRIVATE KEY-----",
		"-----BEGIN PRIVATE KEY-----\\nMIIEvQIBADANBgkqhkiG9w0BAQEFAASC\\n-----END PRIVATE KEY-----", // inside JSON
		"-----BEGIN EC PRIVATE KEY-----\nMHcCAQEEIIrYSSNQFaA2Hwf1duRSxKtLYX5CB04fSeQ6tF1aY",          // cut off
	},
	"a bearer token": {
		"Bearer " + "abcdefghijklmnopqrstuvwxyz.0123456789",
		"bearer " + "eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiIxIn0.c2lnbmF0dXJl",
	},
	"an HTTP basic authorization": {"Authorization: Basic " + "dXNlcjpwYXNzd29yZA=="},
}

// Each case is masked whole in a sentence, named by Kind, and matched by
// its own entry alone; every entry of the table has cases. (A private key
// cut off before its end is masked up to the first character that cannot
// be part of it, here the quote.)
func TestCredentialShapes(t *testing.T) {
	for kind, cases := range shapeCases {
		for _, value := range cases {
			in := `before "` + value + `" after`
			if got := New().String(in); got != `before "`+Mask+`" after` {
				t.Errorf("%s: String(%q) = %q, want it masked whole", kind, in, got)
			}
			if k := Kind(in); k != kind {
				t.Errorf("Kind(%q) = %q, want %q", value, k, kind)
			}
			for _, other := range credentials {
				if other.kind != kind && regexp.MustCompile(other.pattern).MatchString(value) {
					t.Errorf("%q of %s is also matched by %s: removing its own entry would go unnoticed",
						value, kind, other.kind)
				}
			}
		}
	}
	for _, c := range credentials {
		if len(shapeCases[c.kind]) == 0 {
			t.Errorf("the table's %q has no test case", c.kind)
		}
	}
}

// Ordinary text that resembles a credential is left alone.
func TestCredentialShapesSpareOrdinaryText(t *testing.T) {
	for _, s := range []string{
		"task-sk-1", "desk-organizer-component-tests-passing", "sk-short", "-mod=mod",
		"ghp_short", "github_pat_", "glpat-short", "xoxb-short", "AKIAshort", "AKIAIOSFODNN7EXAMPLEXYZ",
		"AIzaShort", "-----BEGIN PUBLIC KEY-----\nMIIBIjANBg\n-----END PUBLIC KEY-----",
		"Bearer short", "Authorization: Bearer", "basic understanding of authorization",
		"https://proxy.golang.org", "the glob sk-* matches nothing",
	} {
		if got := New().String(s); got != s {
			t.Errorf("String(%q) = %q, want it unchanged", s, got)
		}
		if k := Kind(s); k != "" {
			t.Errorf("Kind(%q) = %q, want none", s, k)
		}
	}
}
