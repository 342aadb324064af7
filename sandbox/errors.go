package sandbox

import (
	"errors"
	"fmt"
)

// Errors of a backend that a user can act on.
var (
	ErrDaemonUnreachable = errors.New("cannot reach the Docker daemon")
	ErrImageNotFound     = errors.New("image not found")
	ErrRefused           = errors.New("the sandbox backend refused the sandbox settings")
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

// DefaultImage is the image built from Dockerfile.sandbox.
const DefaultImage = "runner-sandbox:latest"
