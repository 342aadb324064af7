package gitops

import (
	"fmt"
	"net"
	"strings"

	"github.com/go-git/go-git/v5/plumbing/transport"
	githttp "github.com/go-git/go-git/v5/plumbing/transport/http"
	gitssh "github.com/go-git/go-git/v5/plumbing/transport/ssh"

	"github.com/runner-dev/runner/internal/redact"
)

// DefaultTokenUser is the basic-auth user name sent with a token when the
// caller gives none; GitHub and Gitea accept any non-empty name.
const DefaultTokenUser = "x-access-token"

// Credentials authenticate Clone, Push and Rollback. They are sent to the
// remote and never written to disk or into an error message. The zero value
// means anonymous https, and for ssh the keys of the running ssh-agent.
type Credentials struct {
	// Token is sent as the HTTP basic-auth password for http(s) remotes,
	// typically filled by the caller from GITHUB_TOKEN or RUNNER_GIT_TOKEN.
	Token string
	// Username goes with Token; DefaultTokenUser when empty.
	Username string
	// SSHKeyFile is a private key for ssh remotes; empty means ssh-agent.
	SSHKeyFile string
	// SSHKeyPassphrase decrypts SSHKeyFile.
	SSHKeyPassphrase string
}

// String keeps secrets out of logs and %v formatting.
func (c Credentials) String() string {
	var parts []string
	if c.Token != "" {
		parts = append(parts, "token=***")
	}
	if c.SSHKeyFile != "" {
		parts = append(parts, "ssh-key="+c.SSHKeyFile)
	}
	if len(parts) == 0 {
		return "Credentials{}"
	}
	return "Credentials{" + strings.Join(parts, " ") + "}"
}

// GoString keeps secrets out of %#v formatting.
func (c Credentials) GoString() string { return c.String() }

// RemoteSpec names a remote repository by URL, with the credentials to
// reach it. The URL may be a local path, file://, http(s):// or ssh.
type RemoteSpec struct {
	URL  string
	Auth Credentials
}

// remoteAccess is a RemoteSpec made ready for go-git.
type remoteAccess struct {
	url    string // safe to store and print
	auth   transport.AuthMethod
	secret *redact.Redactor // hides the credentials from errors
}

// access splits the spec into a URL without embedded credentials and the
// auth method that carries them instead. Credentials embedded in an http(s)
// URL are used when no Token is given.
func (r RemoteSpec) access() (remoteAccess, error) {
	a := remoteAccess{url: redact.URL(r.URL)}
	a.secret = redact.New(append(redact.URLSecrets(r.URL), r.Auth.Token, r.Auth.SSHKeyPassphrase)...)
	ep, err := transport.NewEndpoint(r.URL)
	if err != nil {
		return a, a.secret.Error(fmt.Errorf("parse remote URL %q: %w", a.url, err))
	}
	switch ep.Protocol {
	case "http", "https":
		user, token := r.Auth.Username, r.Auth.Token
		if token == "" && (ep.User != "" || ep.Password != "") {
			user, token = ep.User, ep.Password
		}
		if token == "" && user == "" {
			return a, nil
		}
		if user == "" {
			user = DefaultTokenUser
		}
		if ep.Protocol == "http" && !isLoopback(ep.Host) {
			return a, fmt.Errorf("%w: %s", ErrInsecureTransport, a.url)
		}
		a.auth = &githttp.BasicAuth{Username: user, Password: token}
	case "ssh":
		if r.Auth.SSHKeyFile == "" {
			return a, nil // go-git falls back to ssh-agent
		}
		user := ep.User
		if user == "" {
			user = "git"
		}
		keys, err := gitssh.NewPublicKeysFromFile(user, r.Auth.SSHKeyFile, r.Auth.SSHKeyPassphrase)
		if err != nil {
			return a, a.secret.Error(fmt.Errorf("load ssh key %s: %w", r.Auth.SSHKeyFile, err))
		}
		a.auth = keys
	case "file":
		if !strings.Contains(r.URL, "://") {
			a.url = ep.Path // a plain path, made absolute by go-git
		}
	}
	return a, nil
}

func isLoopback(host string) bool {
	host = strings.Trim(host, "[]")
	if host == "localhost" {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}
