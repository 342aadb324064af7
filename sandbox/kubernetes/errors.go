package kubernetes

import (
	"errors"
	"fmt"
	"net"
	"strings"

	apierrors "k8s.io/apimachinery/pkg/api/errors"

	"github.com/runner-dev/runner/sandbox"
)

// ErrUnreachable is wrapped by errors of an API server that does not answer.
var ErrUnreachable = errors.New("cannot reach the Kubernetes API server")

// explain turns an API error into one a user can act on: op is what was
// being done ("create pod"), resource the resource it needed ("pods",
// "pods/exec"), for a refusal.
func (b *Backend) explain(op, resource string, err error) error {
	var netErr net.Error
	var opErr *net.OpError
	switch {
	case err == nil:
		return nil
	case apierrors.IsForbidden(err) && isQuota(err):
		return &refusal{fmt.Sprintf("%s in namespace %s: a resource quota or limit range refuses it: %v", op, b.namespace, err)}
	case apierrors.IsForbidden(err) || isForbiddenText(err):
		return &refusal{fmt.Sprintf("%s: RBAC forbids %s on %s in namespace %s for this account (see the Role in the README): %v",
			op, verbOf(err), resource, b.namespace, err)}
	case apierrors.IsUnauthorized(err):
		return fmt.Errorf("%s: the API server at %s does not accept the credentials: %w", op, b.rc.Host, err)
	case apierrors.IsInvalid(err):
		return &refusal{fmt.Sprintf("%s: the API server refuses the sandbox's settings: %v", op, err)}
	case errors.As(err, &opErr), errors.As(err, &netErr):
		return fmt.Errorf("%s: %w at %s: %w", op, ErrUnreachable, b.rc.Host, err)
	}
	return fmt.Errorf("%s: %w", op, err)
}

// isQuota tells a quota's refusal from RBAC's: both are 403s.
func isQuota(err error) bool {
	var st apierrors.APIStatus
	if !errors.As(err, &st) {
		return false
	}
	return containsAny(st.Status().Message, "exceeded quota", "must specify limits", "must specify requests", "forbidden: maximum", "forbidden: minimum")
}

// verbOf reads the verb out of an RBAC refusal's message ("... cannot
// create resource ..."), or "this".
func verbOf(err error) string {
	_, rest, ok := strings.Cut(err.Error(), "cannot ")
	if verb, _, _ := strings.Cut(rest, " "); ok && verb != "" {
		return verb
	}
	return "this"
}

func containsAny(s string, subs ...string) bool {
	for _, sub := range subs {
		if strings.Contains(s, sub) {
			return true
		}
	}
	return false
}

// refusal is an error of the backend's own words that callers still see as
// sandbox.ErrRefused.
type refusal struct{ msg string }

func (r *refusal) Error() string { return r.msg }
func (r *refusal) Unwrap() error { return sandbox.ErrRefused }

// refused makes a refusal from a format.
func refused(format string, args ...any) error {
	return &refusal{msg: fmt.Sprintf(format, args...)}
}

// isForbiddenText tells an RBAC refusal that reached the client as the text
// of a failed stream upgrade (SPDY's, which is not a StatusError).
func isForbiddenText(err error) bool {
	msg := err.Error()
	return strings.Contains(msg, " is forbidden: ") && strings.Contains(msg, " cannot ")
}
