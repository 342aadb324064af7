package redact

import (
	"slices"
	"testing"
)

func TestURL(t *testing.T) {
	tests := []struct{ in, want string }{
		{"https://user:tok@github.com/o/r.git", "https://github.com/o/r.git"},
		{"https://ghp_secret@github.com/o/r.git", "https://github.com/o/r.git"},
		{"HTTP://u:p@host:8080/r?x=1#f", "HTTP://host:8080/r?x=1#f"},
		{"https://u:p%40ss@host/r", "https://host/r"},
		{"https://u:p@ss@host/r", "https://host/r"},
		{"https://u:p%zz@host/r", "https://host/r"},
		{"https://x-access-token:tok@host", "https://host"},
		{"https://github.com/o/r.git", "https://github.com/o/r.git"},
		{"ssh://git@github.com/o/r.git", "ssh://git@github.com/o/r.git"},
		{"ssh://git:pw@github.com:2222/o/r.git", "ssh://git@github.com:2222/o/r.git"},
		{"git@github.com:o/r.git", "git@github.com:o/r.git"},
		{"git:pw@github.com:o/r.git", "git@github.com:o/r.git"},
		{"/srv/repos/r.git", "/srv/repos/r.git"},
		{"/srv/u:p@x/r.git", "/srv/u:p@x/r.git"},
		{"file:///srv/r@x.git", "file:///srv/r@x.git"},
		{"https://host/path/with@sign", "https://host/path/with@sign"},
		{"", ""},
	}
	for _, tt := range tests {
		if got := URL(tt.in); got != tt.want {
			t.Errorf("URL(%q) = %q, want %q", tt.in, got, tt.want)
		}
	}
}

func TestURLSecrets(t *testing.T) {
	tests := []struct {
		in   string
		want []string
	}{
		{"https://user1:s3cr3t-token@h/r", []string{"s3cr3t-token"}},
		{"https://ghp_tokenasuser@h/r", []string{"ghp_tokenasuser"}},
		{"https://u:p%40ss-word@h/r", []string{"p%40ss-word", "p@ss-word"}},
		{"ssh://git:pw-12345678@h/r", []string{"pw-12345678"}},
		{"ssh://git@h/r", nil},
		{"git:pw-12345678@h:r.git", []string{"pw-12345678"}},
		{"git@h:r.git", nil},
		{"https://h/r", nil},
		{"/srv/r", nil},
	}
	for _, tt := range tests {
		if got := URLSecrets(tt.in); !slices.Equal(got, tt.want) {
			t.Errorf("URLSecrets(%q) = %q, want %q", tt.in, got, tt.want)
		}
	}
}

// URLs with credentials inside free text (basic auth in a git error, a
// JSON line of a trajectory) lose their credentials as URL says; nothing
// around them changes.
func TestURLsInText(t *testing.T) {
	tests := []struct{ in, want string }{
		{"clone https://user:hunter2-pass@github.com/x/y.git: denied", "clone https://github.com/x/y.git: denied"},
		{"fatal: unable to access 'https://x-access-token:ghs_abc@github.com/o/r/': 403",
			"fatal: unable to access 'https://github.com/o/r/': 403"},
		{"push ssh://git:pw@h/r and http://tok@127.0.0.1:8080/r.git", "push ssh://git@h/r and http://127.0.0.1:8080/r.git"},
		{`{"error":"https://u:p@h/r","next":"x@y"}`, `{"error":"https://h/r","next":"x@y"}`},
		{`{"a":"https://h/x","b":"u@v"}`, `{"a":"https://h/x","b":"u@v"}`},
		{"https://u:p@ss@h/r", "https://h/r"},
		{"mail me at me@example.com, see https://example.com/a@b", "mail me at me@example.com, see https://example.com/a@b"},
		{"http://user@[::1]:8080/r", "http://[::1]:8080/r"},
	}
	for _, tt := range tests {
		if got := New().String(tt.in); got != tt.want {
			t.Errorf("String(%q) = %q, want %q", tt.in, got, tt.want)
		}
	}
}
