package sandbox

import (
	"errors"
	"fmt"

	cerrdefs "github.com/containerd/errdefs"
	"github.com/moby/moby/client"
)

// Errors of the engine that a user can act on.
var (
	ErrDaemonUnreachable = errors.New("cannot reach the Docker daemon")
	ErrImageNotFound     = errors.New("image not found")
	ErrRefused           = errors.New("the Docker engine refused the sandbox settings")
)

// ImageError tells which image is missing and how to get it.
type ImageError struct{ Image string }

func (e *ImageError) Error() string {
	return fmt.Sprintf("image %s not found — %s", e.Image, e.Advice())
}

// Advice says how to get the missing image: runner builds its own image
// (DefaultImage); any other image is pulled or built the usual way, and
// only a user who means runner's image under another name builds it with a
// tag.
func (e *ImageError) Advice() string {
	if e.Image == DefaultImage {
		return "build it with `runner image build`"
	}
	return fmt.Sprintf("pull or build it (`docker pull %s`), or, for runner's own sandbox image under that name, `runner image build --tag %s`", e.Image, e.Image)
}

func (e *ImageError) Unwrap() error { return ErrImageNotFound }

// explain turns an engine error into one a user can act on. op names what
// was being done ("create sandbox"); image is the image involved, if any.
func (e *Engine) explain(op, image string, err error) error {
	switch {
	case err == nil:
		return nil
	case client.IsErrConnectionFailed(err):
		return fmt.Errorf("%s: %w at %s: is it running? (DOCKER_HOST selects another engine): %w",
			op, ErrDaemonUnreachable, e.cli.DaemonHost(), err)
	case image != "" && cerrdefs.IsNotFound(err) && isImageMessage(err):
		return fmt.Errorf("%s: %w", op, &ImageError{Image: image})
	case cerrdefs.IsInvalidArgument(err):
		return fmt.Errorf("%s: %w: %w", op, ErrRefused, err)
	}
	return fmt.Errorf("%s: %w", op, err)
}

// isImageMessage tells an image 404 from a container 404.
func isImageMessage(err error) bool {
	var msg = err.Error()
	return containsFold(msg, "image") || containsFold(msg, "repository")
}
