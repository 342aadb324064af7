package tasks

import (
	"errors"
	"slices"
	"strings"

	"go.yaml.in/yaml/v3"
)

// DefaultExclude is the exclude list of a task that sets none: build and
// cache artifacts of common toolchains that a repository may forget to
// ignore. The commit reads it as git reads core.excludesFile (see
// gitops.CommitOptions.Exclude): lowest precedence, a repository's
// "!pattern" re-includes, a tracked file is never hidden.
var DefaultExclude = []string{
	// Python: bytecode and the caches of test runners, type checkers, linters.
	"__pycache__/",
	"*.py[cod]",
	".pytest_cache/",
	".mypy_cache/",
	".ruff_cache/",
	".hypothesis/",
	".tox/",
	".nox/",
	".coverage",
	".coverage.*",
	"htmlcov/",
	"*.egg-info/",
	// JavaScript and TypeScript caches.
	".eslintcache",
	"*.tsbuildinfo",
	".parcel-cache/",
	// Operating system and editor litter.
	".DS_Store",
	"Thumbs.db",
	"*.swp",
	"*~",
}

// checkExcludePattern refuses what a one-line gitignore pattern cannot be.
func checkExcludePattern(p string) error {
	switch {
	case strings.TrimSpace(p) == "":
		return errors.New("empty pattern")
	case strings.ContainsAny(p, "\n\r"):
		return errors.New("a pattern is one line")
	case strings.HasPrefix(p, "#"):
		return errors.New(`a pattern starting with # is a comment; write \# to match a leading #`)
	}
	return nil
}

func decodeExclude(r *reader, v *yaml.Node, a at, s *spec) {
	patterns, ok := r.strList(v, a, "gitignore patterns", checkExcludePattern)
	if ok {
		s.Exclude = &patterns
	}
}

// mergeExclude is the task's exclude list, else the defaults', else
// DefaultExclude; an empty list means none.
func mergeExclude(d, s *spec) []string {
	if p := pick(s.Exclude, d.Exclude); p != nil {
		return slices.Clone(*p)
	}
	return slices.Clone(DefaultExclude)
}
