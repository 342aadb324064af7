// Package devcontainer reads a repository's development container
// configuration (devcontainer.json, JSON with comments and trailing
// commas) for what a sandbox can take from it: the image or the Dockerfile
// to build, build arguments, the container's environment and the commands
// that prepare the environment. Everything that would change the
// sandbox's isolation (privileged, capAdd, mounts, runArgs, users, ...)
// is never obeyed; Config.Ignored lists each such key so the caller can
// report it.
//
// The file comes from an untrusted repository: it is read with a size
// cap, paths it names must stay inside the repository, and values that
// would take the host's environment (${localEnv:...}) are refused.
package devcontainer

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path"
	"strings"
)

// Paths are where the configuration is looked for, in order, relative to
// the repository's root.
var Paths = []string{".devcontainer/devcontainer.json", ".devcontainer.json"}

// MaxSize caps the configuration file.
const MaxSize = 1 << 20

// ErrNotFound: the repository has no configuration at any of Paths.
var ErrNotFound = errors.New("no .devcontainer/devcontainer.json or .devcontainer.json in the repository")

// Config is what a sandbox takes from a devcontainer.json.
type Config struct {
	// Path is the file read, relative to the repository's root.
	Path string
	// Image is the image to start from; empty when Build is set.
	Image string
	// Build is set when the configuration builds a Dockerfile.
	Build *Build
	// ContainerEnv are environment variables of the container.
	ContainerEnv map[string]string
	// Setup are the shell commands of onCreateCommand,
	// updateContentCommand and postCreateCommand, in that order, meant to
	// run once as the environment's setup (see Lifecycle).
	Setup []string
	// Ignored are the keys given but not obeyed, in file order.
	Ignored []Ignored
}

// Build is how the configuration builds its image. Paths are relative to
// the repository's root, slash-separated and clean; none leaves it.
type Build struct {
	Dockerfile string
	Context    string
	Args       map[string]string
	Target     string
}

// Ignored is a key of the configuration that is not obeyed.
type Ignored struct {
	Key string
	// Security is true for keys that would change the sandbox's isolation
	// (privileges, capabilities, mounts, users, host commands).
	Security bool
	Why      string
}

func (i Ignored) String() string {
	return fmt.Sprintf("%s not obeyed: %s", i.Key, i.Why)
}

// SecurityKeys are the keys that, if obeyed, would change the sandbox's
// isolation, with what the sandbox does instead.
var SecurityKeys = map[string]string{
	"privileged":        "the sandbox is never privileged",
	"capAdd":            "the sandbox drops every capability",
	"securityOpt":       "the sandbox keeps no-new-privileges and the engine's default profiles",
	"mounts":            "nothing of the host is mounted into the sandbox",
	"workspaceMount":    "the workspace is copied in, not mounted",
	"runArgs":           "the sandbox's container options are runner's own",
	"init":              "the sandbox always runs the engine's init as PID 1",
	"initializeCommand": "nothing from the repository runs on the host",
	"containerUser":     "commands run as the sandbox user (uid 1000)",
	"remoteUser":        "commands run as the sandbox user (uid 1000)",
	"appPort":           "no port of the sandbox is published",
	"features":          "features are not installed (they may ask for privileges); install tools in a Dockerfile",
	"build.options":     "docker build options are not passed on",
}

// otherIgnored are keys that change nothing of the isolation and are not
// obeyed either.
var otherIgnored = map[string]string{
	"forwardPorts":         "no port of the sandbox is forwarded",
	"portsAttributes":      "no port of the sandbox is forwarded",
	"otherPortsAttributes": "no port of the sandbox is forwarded",
	"postStartCommand":     "only onCreateCommand, updateContentCommand and postCreateCommand run, once, as setup",
	"postAttachCommand":    "only onCreateCommand, updateContentCommand and postCreateCommand run, once, as setup",
	"waitFor":              "setup commands always finish before the agent starts",
	"remoteEnv":            "use containerEnv, or the task's env",
	"updateRemoteUserUID":  "the sandbox user is uid 1000",
	"userEnvProbe":         "the environment is the image's, containerEnv and the task's env",
	"overrideCommand":      "the sandbox always replaces the image's command",
	"shutdownAction":       "the sandbox is removed when the task ends",
	"workspaceFolder":      "the workspace is always /workspace",
	"hostRequirements":     "the task's limits decide the resources",
	"build.cacheFrom":      "the build uses the engine's local cache only",
}

// silent are keys that concern editors only.
var silent = map[string]bool{"name": true, "$schema": true, "customizations": true}

// Find returns the first of Paths that exists in the repository at root,
// without following a symlink out of it.
func Find(root string) (string, error) {
	r, err := os.OpenRoot(root)
	if err != nil {
		return "", fmt.Errorf("devcontainer: %w", err)
	}
	defer r.Close()
	for _, p := range Paths {
		if _, err := r.Lstat(p); err == nil {
			return p, nil
		}
	}
	return "", ErrNotFound
}

// Load finds and parses the configuration of the repository at root.
// The file is opened inside root: a symlink that leads out of the
// repository is refused, and so is a file over MaxSize.
func Load(root string) (*Config, error) {
	p, err := Find(root)
	if err != nil {
		return nil, err
	}
	data, err := readIn(root, p)
	if err != nil {
		return nil, err
	}
	return Parse(p, data)
}

func readIn(root, name string) ([]byte, error) {
	r, err := os.OpenRoot(root)
	if err != nil {
		return nil, fmt.Errorf("devcontainer: %w", err)
	}
	defer r.Close()
	f, err := r.Open(name)
	if err != nil {
		return nil, fmt.Errorf("devcontainer: %w", err)
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil {
		return nil, fmt.Errorf("devcontainer: %w", err)
	}
	if !st.Mode().IsRegular() {
		return nil, fmt.Errorf("devcontainer: %s is not a regular file", name)
	}
	data, err := io.ReadAll(io.LimitReader(f, MaxSize+1))
	if err != nil {
		return nil, fmt.Errorf("devcontainer: read %s: %w", name, err)
	}
	if len(data) > MaxSize {
		return nil, fmt.Errorf("devcontainer: %s is over %d KiB", name, MaxSize>>10)
	}
	return data, nil
}

// inRepo resolves p, written in the file at cfgPath, against the file's
// directory, and refuses a path that leaves the repository.
func inRepo(cfgPath, key, p string) (string, error) {
	if p == "" {
		return "", fmt.Errorf("%s is empty", key)
	}
	if strings.ContainsRune(p, 0) || strings.Contains(p, `\`) {
		return "", fmt.Errorf("%s %q: want a slash-separated path in the repository", key, p)
	}
	if path.IsAbs(p) {
		return "", fmt.Errorf("%s %q: want a path relative to %s, not an absolute one", key, p, cfgPath)
	}
	full := path.Clean(path.Join(path.Dir(cfgPath), p))
	if full == ".." || strings.HasPrefix(full, "../") {
		return "", fmt.Errorf("%s %q leaves the repository", key, p)
	}
	return full, nil
}

// CheckInRepo returns an error when the regular file name (slash-separated,
// relative to root) does not exist in the repository at root, without
// following a symlink out of it.
func CheckInRepo(root, name string) error {
	r, err := os.OpenRoot(root)
	if err != nil {
		return err
	}
	defer r.Close()
	st, err := r.Stat(name)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return fmt.Errorf("%s does not exist in the repository", name)
	case err != nil:
		return fmt.Errorf("%s: %w", name, err)
	case !st.Mode().IsRegular():
		return fmt.Errorf("%s is not a regular file", name)
	}
	return nil
}

// CheckDirInRepo returns an error when name (slash-separated, relative to
// root) is not a directory of the repository at root, reached without
// following a symlink out of it.
func CheckDirInRepo(root, name string) error {
	r, err := os.OpenRoot(root)
	if err != nil {
		return err
	}
	defer r.Close()
	st, err := r.Lstat(name)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return fmt.Errorf("%s does not exist in the repository", name)
	case err != nil:
		return fmt.Errorf("%s: %w", name, err)
	case !st.IsDir():
		return fmt.Errorf("%s is not a directory (a symlink is not followed)", name)
	}
	return nil
}
