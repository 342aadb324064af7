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
		return fmt.Errorf("%s in namespace %s: a resource quota refuses it: %w: %w", op, b.namespace, sandbox.ErrRefused, err)
	case apierrors.IsForbidden(err):
		return fmt.Errorf("%s: RBAC forbids %s on %s in namespace %s for this account (see the Role in the README): %w: %w",
			op, verbOf(err), resource, b.namespace, sandbox.ErrRefused, err)
	case apierrors.IsUnauthorized(err):
		return fmt.Errorf("%s: the API server at %s does not accept the credentials: %w", op, b.rc.Host, err)
	case apierrors.IsInvalid(err):
		return fmt.Errorf("%s: %w: %w", op, sandbox.ErrRefused, err)
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
