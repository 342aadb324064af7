package gitops

import (
	"errors"
	"fmt"
	"strings"
	"testing"

	githttp "github.com/go-git/go-git/v5/plumbing/transport/http"
)

func TestCredentialsFormattingHidesToken(t *testing.T) {
	c := Credentials{Token: "ghp_verysecret", SSHKeyPassphrase: "pass-phrase"}
	for _, s := range []string{fmt.Sprint(c), fmt.Sprintf("%v", c), fmt.Sprintf("%+v", c), fmt.Sprintf("%#v", c), fmt.Sprint(RemoteSpec{URL: "x", Auth: c})} {
		if strings.Contains(s, "verysecret") || strings.Contains(s, "pass-phrase") {
			t.Errorf("formatted credentials leak a secret: %s", s)
		}
	}
}

func TestRemoteAccess(t *testing.T) {
	tests := []struct {
		name     string
		spec     RemoteSpec
		wantURL  string
		wantUser string
		wantPass string
		wantErr  error
	}{
		{"token", RemoteSpec{URL: "https://h/r.git", Auth: Credentials{Token: "t0k"}}, "https://h/r.git", DefaultTokenUser, "t0k", nil},
		{"token and user", RemoteSpec{URL: "https://h/r.git", Auth: Credentials{Token: "t0k", Username: "me"}}, "https://h/r.git", "me", "t0k", nil},
		{"embedded", RemoteSpec{URL: "https://me:pw@h/r.git"}, "https://h/r.git", "me", "pw", nil},
		{"token wins over embedded", RemoteSpec{URL: "https://me:pw@h/r.git", Auth: Credentials{Token: "t0k"}}, "https://h/r.git", DefaultTokenUser, "t0k", nil},
		{"anonymous", RemoteSpec{URL: "https://h/r.git"}, "https://h/r.git", "", "", nil},
		{"plain http loopback", RemoteSpec{URL: "http://127.0.0.1:9/r.git", Auth: Credentials{Token: "t0k"}}, "http://127.0.0.1:9/r.git", DefaultTokenUser, "t0k", nil},
		{"plain http remote host", RemoteSpec{URL: "http://example.com/r.git", Auth: Credentials{Token: "t0k"}}, "", "", "", ErrInsecureTransport},
		{"ssh agent", RemoteSpec{URL: "git@h:o/r.git", Auth: Credentials{Token: "ignored"}}, "git@h:o/r.git", "", "", nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			acc, err := tt.spec.access()
			if !errors.Is(err, tt.wantErr) {
				t.Fatalf("err = %v, want %v", err, tt.wantErr)
			}
			if err != nil {
				if strings.Contains(err.Error(), "t0k") {
					t.Errorf("error leaks the token: %v", err)
				}
				return
			}
			if acc.url != tt.wantURL {
				t.Errorf("url = %q, want %q", acc.url, tt.wantURL)
			}
			var user, pass string
			if acc.auth != nil {
				user, pass = basicAuth(t, acc)
			}
			if user != tt.wantUser || pass != tt.wantPass {
				t.Errorf("basic auth = %q:%q, want %q:%q", user, pass, tt.wantUser, tt.wantPass)
			}
		})
	}
}

func basicAuth(t *testing.T, acc remoteAccess) (user, pass string) {
	t.Helper()
	ba, ok := acc.auth.(*githttp.BasicAuth)
	if !ok {
		t.Fatalf("auth is %T, want *http.BasicAuth", acc.auth)
	}
	return ba.Username, ba.Password
}
