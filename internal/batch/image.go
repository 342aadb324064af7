package batch

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"strings"

	"github.com/runner-dev/runner/internal/devcontainer"
	"github.com/runner-dev/runner/sandbox"
	"github.com/runner-dev/runner/tasks"
)

// environment is what the sandbox starts from: the image, and what the
// repository's devcontainer.json adds.
type environment struct {
	image string
	// env is devcontainer.json's containerEnv; the task's env wins over it.
	env map[string]string
	// setup are devcontainer.json's onCreateCommand, updateContentCommand
	// and postCreateCommand, as shell commands, for the setup phase.
	setup []string
	// warnings say what of the image or its configuration is not obeyed.
	warnings []string
}

// errNoBuilder: the sandbox backend cannot build images.
var errNoBuilder = errors.New("this sandbox backend cannot build images")

// resolveImage resolves the task's image. An image from the
// repository (image: dockerfile:PATH, image: devcontainer) is built from
// the clone in dir, the checked-out tree at the task's ref, or taken from
// the engine's cache when the same content was built before.
func (w *work) resolveImage(ctx context.Context, dir string) (environment, error) {
	t := w.task
	if t.Build == nil {
		return environment{image: t.Image}, nil
	}
	where := fmt.Sprintf("image %s (%s)", t.Build, t.Build.Source.File)
	if t.Build.Source.Line > 0 {
		where = fmt.Sprintf("image %s (%s:%d)", t.Build, t.Build.Source.File, t.Build.Source.Line)
	}
	if w.deps.BuildImage == nil {
		return environment{}, fmt.Errorf("%s: %w", where, errNoBuilder)
	}
	var env environment
	opt := sandbox.ContextBuildOptions{Dir: dir, Dockerfile: t.Build.Dockerfile}
	if t.Build.Devcontainer {
		c, err := devcontainer.Load(dir)
		if err != nil {
			return environment{}, fmt.Errorf("%s: %w", where, err)
		}
		env.env, env.setup = c.ContainerEnv, c.Setup
		for _, i := range c.Ignored {
			env.warnings = append(env.warnings, c.Path+": "+i.String())
		}
		if c.Build == nil {
			env.image = c.Image
			return env, nil
		}
		opt, err = devcontainerBuild(dir, c)
		if err != nil {
			return environment{}, fmt.Errorf("%s: %w", where, err)
		}
	}
	img, err := w.deps.BuildImage(ctx, opt)
	if err != nil {
		return environment{}, fmt.Errorf("%s: %w", where, err)
	}
	env.image = img.Ref
	env.warnings = append(env.warnings, imageWarnings(img)...)
	return env, nil
}

// devcontainerBuild is the build devcontainer.json asks for, its context
// a directory of the repository.
func devcontainerBuild(dir string, c *devcontainer.Config) (sandbox.ContextBuildOptions, error) {
	b := c.Build
	df := b.Dockerfile
	ctxDir := dir
	if b.Context != "." {
		ctxDir = dir + "/" + b.Context
		df = strings.TrimPrefix(df, b.Context+"/")
		if err := devcontainer.CheckDirInRepo(dir, b.Context); err != nil {
			return sandbox.ContextBuildOptions{}, fmt.Errorf("%s: build.context: %w", c.Path, err)
		}
	}
	return sandbox.ContextBuildOptions{Dir: ctxDir, Dockerfile: df, Args: maps.Clone(b.Args), Target: b.Target}, nil
}

// imageWarnings report what a built image asks for that the sandbox does
// not obey.
func imageWarnings(img sandbox.BuiltImage) []string {
	var out []string
	switch u := img.User; u {
	case "", "1000", "1000:1000", "sandbox":
	default:
		out = append(out, fmt.Sprintf("the image's USER %s not obeyed: commands run as the sandbox user (uid %d)", u, sandbox.UID))
	}
	return out
}

// withImageEnv is the task's env over the image configuration's.
func withImageEnv(t tasks.Task, env map[string]string) map[string]string {
	if len(env) == 0 {
		return t.Env
	}
	out := maps.Clone(env)
	maps.Copy(out, t.Env)
	return out
}

// withDefaultImage gives a task that names no image the run's (--image),
// which may itself be dockerfile:PATH or devcontainer, else DefaultImage.
func withDefaultImage(t tasks.Task, image string) tasks.Task {
	if t.Image != "" || t.Build != nil {
		return t
	}
	if b, ok, err := tasks.ParseImageBuild(image); ok && err == nil {
		b.Source = tasks.Source{File: "--image"}
		t.Build = b
		return t
	}
	t.Image = image
	if t.Image == "" {
		t.Image = sandbox.DefaultImage
	}
	return t
}
