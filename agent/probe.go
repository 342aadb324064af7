package agent

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/url"
	"strings"

	"github.com/openai/openai-go/v3/option"
)

// ErrUnreachable means the endpoint does not answer: the connection fails,
// or a gateway answers that the server behind it is down (502, 503, 504).
var ErrUnreachable = errors.New("does not answer")

// Probe asks the endpoint for its list of models (GET {base}/models), which
// every OpenAI-compatible server serves at no cost, in one attempt under
// ctx. It returns nil when the server answers, even that it has no such
// list (404, 405...) or that it is busy (429); an error wrapping ErrAuth
// when it refuses the key (401, 403), which also wraps the *ModelError; an
// error wrapping ErrUnreachable when it does not answer or answers 502, 503
// or 504. Error texts hold no key and no URL; they read after the
// endpoint's name ("refused the key: …", "does not answer: …").
func (m *OpenAIModel) Probe(ctx context.Context) error {
	var raw []byte
	var res *http.Response
	_, err := m.client.Models.List(ctx, option.WithResponseBodyInto(&raw), option.WithResponseInto(&res),
		option.WithMaxRetries(0))
	if res != nil && res.StatusCode >= 400 {
		refusal := m.refusal(res)
		switch {
		case errors.Is(refusal, ErrAuth):
			return fmt.Errorf("refused the key: %w", refusal)
		case outageKind(refusal) && refusal.StatusCode != http.StatusTooManyRequests:
			return fmt.Errorf("%w: %d %s", ErrUnreachable, res.StatusCode, http.StatusText(res.StatusCode))
		}
		return nil
	}
	switch {
	case err == nil:
		return nil
	case errors.Is(ctx.Err(), context.Canceled):
		return fmt.Errorf("list models: %w", ctx.Err())
	case errors.Is(ctx.Err(), context.DeadlineExceeded):
		return fmt.Errorf("%w: no answer in time", ErrUnreachable)
	}
	return fmt.Errorf("%w: %v", ErrUnreachable, m.secret.Error(transportCause(err)))
}

// transportCause drops the request line a *url.Error adds ("Get
// \"https://…\": "), which repeats the URL, query and all.
func transportCause(err error) error {
	var ue *url.Error
	if errors.As(err, &ue) && ue.Err != nil {
		return ue.Err
	}
	return err
}

// EndpointName is how messages name an endpoint: its base URL with no user
// information, query or fragment, which may carry credentials. An empty
// base is the OpenAI API.
func EndpointName(base string) string {
	if base == "" {
		return "https://api.openai.com/v1"
	}
	u, err := url.Parse(base)
	if err != nil || u.Host == "" {
		return "(an unparsable URL)"
	}
	return strings.TrimSuffix((&url.URL{Scheme: u.Scheme, Host: u.Host, Path: u.Path}).String(), "/")
}

// IsLoopback tells whether base names this machine (localhost, 127.0.0.0/8,
// ::1), where a server such as Ollama or vLLM may need no key.
func IsLoopback(base string) bool {
	u, err := url.Parse(base)
	if err != nil || base == "" {
		return false
	}
	host := strings.ToLower(u.Hostname())
	if host == "localhost" || strings.HasSuffix(host, ".localhost") {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}
