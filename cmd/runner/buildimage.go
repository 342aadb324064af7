package main

import (
	"context"

	"github.com/runner-dev/runner/sandbox"
)

// buildImage is the backend's builder of images from a repository, or nil
// when it has none.
func buildImage(b sandbox.Backend) func(context.Context, sandbox.ContextBuildOptions) (sandbox.BuiltImage, error) {
	if cb, ok := b.(sandbox.ContextBuilder); ok {
		return cb.BuildContext
	}
	return nil
}
