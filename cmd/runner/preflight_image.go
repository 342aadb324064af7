package main

import (
	"fmt"

	"github.com/runner-dev/runner/gitops"
	"github.com/runner-dev/runner/internal/devcontainer"
	"github.com/runner-dev/runner/tasks"
)

// checkImageBuild checks, in a local repository at the task's ref, what
// image: dockerfile:PATH or image: devcontainer will build from: the
// Dockerfile exists, devcontainer.json exists and reads. The
// devcontainer.json keys that would change the sandbox's isolation
// (privileged, capAdd, mounts, ...) are warnings: they are not obeyed.
func checkImageBuild(in *gitops.Inspection, t tasks.Task, rep *repoReport) {
	b := t.Build
	if b == nil {
		return
	}
	at := func(format string, args ...any) tasks.Problem {
		return tasks.Problem{File: b.Source.File, Line: b.Source.Line, TaskID: t.ID, Field: "image",
			Msg: "image: " + fmt.Sprintf(format, args...)}
	}
	refName := t.Ref
	if refName == "" {
		refName = "HEAD"
	}
	exists := func(name string) (bool, error) {
		_, found, err := in.ReadFile(t.Ref, name, 64<<20)
		return found, err
	}
	if !b.Devcontainer {
		switch found, err := exists(b.Dockerfile); {
		case err != nil:
			rep.problems = append(rep.problems, at("%v", err))
		case !found:
			rep.problems = append(rep.problems, at("Dockerfile %s does not exist in the repository at %s", b.Dockerfile, refName))
		}
		return
	}
	var c *devcontainer.Config
	for _, p := range devcontainer.Paths {
		data, found, err := in.ReadFile(t.Ref, p, devcontainer.MaxSize)
		if err != nil {
			rep.problems = append(rep.problems, at("devcontainer: %v", err))
			return
		}
		if found {
			if c, err = devcontainer.Parse(p, data); err != nil {
				rep.problems = append(rep.problems, at("%v", err))
				return
			}
			break
		}
	}
	if c == nil {
		rep.problems = append(rep.problems, at("devcontainer: %v at %s", devcontainer.ErrNotFound, refName))
		return
	}
	for _, i := range c.Ignored {
		if i.Security {
			rep.warnings = append(rep.warnings, at("%s: %s", c.Path, i))
		}
	}
	if c.Build != nil {
		switch found, err := exists(c.Build.Dockerfile); {
		case err != nil:
			rep.problems = append(rep.problems, at("%v", err))
		case !found:
			rep.problems = append(rep.problems, at("%s: build.dockerfile %s does not exist in the repository at %s", c.Path, c.Build.Dockerfile, refName))
		}
	}
}
