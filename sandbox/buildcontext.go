package sandbox

import (
	"context"
	"io"
)

// ContextBuildOptions describe an image built from a directory of the
// host, a repository's own Dockerfile with the repository as its build
// context. The directory is untrusted: only what is inside it is sent
// (a symlink is sent as a symlink, never followed), the top-level .git is
// never sent, .dockerignore is applied, and the context is bounded.
type ContextBuildOptions struct {
	// Dir is the context's root on the host.
	Dir string
	// Dockerfile is the Dockerfile's path in Dir, slash-separated.
	Dockerfile string
	// Args are the build arguments; Target the stage to build, if any.
	Args   map[string]string
	Target string
	// MaxContextSize caps the bytes of file content sent;
	// DefaultMaxContextSize when zero.
	MaxContextSize int64
	// Progress receives the build's output; nil discards it.
	Progress io.Writer
}

// DefaultMaxContextSize bounds a build context by default.
const DefaultMaxContextSize = 1 << 30

// BuiltImage is the result of a context build.
type BuiltImage struct {
	// Ref names the image; it is derived from the content of the context,
	// the Dockerfile's path, the arguments and the target.
	Ref string
	// Cached is true when an image of the same content already existed
	// and nothing was built.
	Cached bool
	// User is the image's USER, which a sandbox does not obey (commands
	// run as UID): a caller reports it. Volumes are its VOLUME paths.
	User    string
	Volumes []string
}

// ContextBuilder is implemented by backends that build images from a
// directory (the Docker backend does).
type ContextBuilder interface {
	// BuildContext builds the image opt describes, unless the backend
	// already holds one built from the same content. A missing Dockerfile
	// is an error naming its path; a context over the cap is refused
	// before anything is sent.
	BuildContext(ctx context.Context, opt ContextBuildOptions) (BuiltImage, error)
}
