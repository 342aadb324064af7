// Package runner holds the files that the runner binary carries with it.
package runner

import _ "embed"

// SandboxDockerfile is Dockerfile.sandbox, the recipe of the default
// sandbox image; `runner image build` builds it with the engine.
//
//go:embed Dockerfile.sandbox
var SandboxDockerfile []byte
