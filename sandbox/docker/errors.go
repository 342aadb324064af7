package docker

import (
	"fmt"
	"strings"

	cerrdefs "github.com/containerd/errdefs"
	"github.com/moby/moby/client"

	"github.com/runner-dev/runner/sandbox"
)

// explain turns an engine error into one a user can act on. op names what
// was being done ("create sandbox"); image is the image involved, if any.
func (e *Engine) explain(op, image string, err error) error {
	switch {
	case err == nil:
		return nil
	case client.IsErrConnectionFailed(err):
		return fmt.Errorf("%s: %w at %s: is it running? (DOCKER_HOST selects another engine): %w",
			op, sandbox.ErrDaemonUnreachable, e.cli.DaemonHost(), err)
	case image != "" && cerrdefs.IsNotFound(err) && isImageMessage(err):
		return fmt.Errorf("%s: %w", op, &sandbox.ImageError{Image: image})
	case cerrdefs.IsInvalidArgument(err):
		return fmt.Errorf("%s: %w: %w", op, sandbox.ErrRefused, err)
	}
	return fmt.Errorf("%s: %w", op, err)
}

// isImageMessage tells an image 404 from a container 404.
func isImageMessage(err error) bool {
	var msg = err.Error()
	return containsFold(msg, "image") || containsFold(msg, "repository")
}

func containsFold(s, sub string) bool {
	return strings.Contains(strings.ToLower(s), strings.ToLower(sub))
}
