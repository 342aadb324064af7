package main

import (
	"fmt"
	"testing"

	"github.com/runner-dev/runner/internal/cli"
)

// validate reads what image: dockerfile:PATH and image: devcontainer will
// build from, in the repository at each task's ref: a missing Dockerfile
// is a problem at the image key's line, and the devcontainer.json keys
// that would change the sandbox's isolation are reported as not obeyed.
func TestValidateImageFromTheRepository(t *testing.T) {
	repo, _ := sourceRepo(t, map[string]string{
		"Dockerfile": "FROM scratch\n",
		".devcontainer/devcontainer.json": `{
  // the repository's development container
  "build": {"dockerfile": "Dockerfile.dev"},
  "privileged": true,
  "capAdd": ["SYS_ADMIN"],
  "mounts": ["source=/,target=/host,type=bind"],
  "forwardPorts": [8080],
}`,
	})
	file := writeTaskFile(t, fmt.Sprintf(`
defaults: {repo: %s}
tasks:
  - {id: ok, prompt: p, image: "dockerfile:Dockerfile"}
  - {id: missing, prompt: p,
     image: "dockerfile:ci/Dockerfile"}
  - {id: dev, prompt: p, image: devcontainer}
`, repo))
	res := runBinary(t, "validate", file)
	if res.code != cli.ExitUsage {
		t.Fatalf("runner validate: %s", res)
	}
	checkLines(t, "stderr", res.stderr, []string{
		"warning: " + file + `:7: task "dev": image: .devcontainer/devcontainer.json: privileged not obeyed: the sandbox is never privileged`,
		"warning: " + file + `:7: task "dev": image: .devcontainer/devcontainer.json: capAdd not obeyed: the sandbox drops every capability`,
		"warning: " + file + `:7: task "dev": image: .devcontainer/devcontainer.json: mounts not obeyed: nothing of the host is mounted into the sandbox`,
		file + `:6: task "missing": image: Dockerfile ci/Dockerfile does not exist in the repository at HEAD`,
		file + `:7: task "dev": image: .devcontainer/devcontainer.json: build.dockerfile .devcontainer/Dockerfile.dev does not exist in the repository at HEAD`,
		"runner: 2 problems",
	})
}
