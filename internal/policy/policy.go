// Package policy decides which of the agent's tool calls may run: the
// paths it may not change, the commands it may not run, and a host program
// (the pre-tool hook) that can refuse any call before it reaches the
// sandbox.
//
// Paths are relative to the workspace root and slash-separated, as in the
// repository. A path given by the agent is normalised first (a leading
// /workspace/ or ./ is dropped, the path cleaned); a path that leaves the
// workspace is none of the policy's business: the sandbox refuses it.
package policy

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"regexp"
	"regexp/syntax"
	"strings"
	"time"

	"github.com/runner-dev/runner/internal/wildmatch"
)

// Workspace is where the repository is in the sandbox; tool paths may be
// given relative to it or absolute under it.
const Workspace = "/workspace"

// DefaultHookTimeout bounds one run of the pre-tool hook when the policy
// sets no HookTimeout.
const DefaultHookTimeout = 30 * time.Second

// DefaultProtected are the paths protected unless a task says otherwise:
// the files that make other systems, or a developer's machine, run code or
// trust people, which an agent talked into it by the repository it reads
// could turn against their owner. A glob without '/' matches at any depth,
// like .gitignore.
//
//   - .github/workflows/**, .github/actions/**: GitHub Actions workflows
//     and the local actions they call, which run with the repository's
//     secrets; .github/dependabot.yml (or .yaml): what Dependabot fetches;
//   - .gitlab-ci.yml, .gitlab/**, .circleci/**, .travis.yml, Jenkinsfile:
//     the pipelines of GitLab, CircleCI, Travis CI and Jenkins;
//   - .pre-commit-config.yaml, .envrc, .vscode/tasks.json,
//     .vscode/settings.json, .devcontainer/**: what runs on a developer's
//     machine when the branch is checked out or opened (pre-commit hooks,
//     direnv, VS Code tasks and settings, dev containers);
//   - .gitmodules: submodule URLs, fetched by whoever clones recursively;
//   - CODEOWNERS: who must review changes (any of its three places).
var DefaultProtected = []string{
	".github/workflows/**",
	".github/actions/**",
	".github/dependabot.yml",
	".github/dependabot.yaml",
	".gitlab-ci.yml",
	".gitlab/**",
	".circleci/**",
	".travis.yml",
	"Jenkinsfile",
	".pre-commit-config.yaml",
	".envrc",
	".vscode/tasks.json",
	".vscode/settings.json",
	".devcontainer/**",
	".gitmodules",
	"CODEOWNERS",
}

// Policy is what a task's agent may not do.
type Policy struct {
	// Protected are globs of paths that write_file and edit_file refuse,
	// and that a commit may not change (whatever changed them, and
	// through whatever symlink; see gitops.CommitOptions.Protected).
	// Matching follows .gitignore, under every spelling a case-insensitive
	// file system takes for a name (see Protection): a pattern without '/'
	// matches a name at any depth, one with '/' matches from the root,
	// "**" spans directories, and a matching directory protects everything
	// inside it.
	Protected []string
	// DenyCommands are Go regular expressions (RE2 syntax). run_command
	// refuses a command line when any of them matches anywhere in it (use
	// ^ and $ to anchor, (?i) to ignore case, (?s) to let . match a
	// newline). Rules are a tripwire, not a boundary: a determined agent
	// can spell a command in ways no rule foresees.
	DenyCommands []string
	// Hook is the absolute host path of the pre-tool hook, run before every
	// tool call but complete (see CheckHook); empty means none.
	Hook string
	// HookTimeout bounds one run of the hook; DefaultHookTimeout if zero.
	HookTimeout time.Duration
}

// ErrInvalid matches every problem Validate and the Check functions report.
var ErrInvalid = errors.New("invalid policy")

// invalidError is a problem of a policy, worded to stand on its own.
type invalidError struct{ msg string }

func (e *invalidError) Error() string        { return e.msg }
func (e *invalidError) Is(target error) bool { return target == ErrInvalid }

func invalid(format string, args ...any) error {
	return &invalidError{msg: fmt.Sprintf(format, args...)}
}

// Validate reports every problem of p at once, each naming the pattern,
// rule or hook concerned.
func (p Policy) Validate() error {
	var errs []error
	for _, pat := range p.Protected {
		errs = append(errs, CheckPattern(pat))
	}
	for _, rule := range p.DenyCommands {
		errs = append(errs, CheckRule(rule))
	}
	if p.Hook != "" {
		errs = append(errs, CheckHookPath(p.Hook))
	}
	if p.HookTimeout < 0 {
		errs = append(errs, invalid("hook timeout %s is negative", p.HookTimeout))
	}
	return errors.Join(errs...)
}

// CheckPattern reports a protected-path glob that is malformed (see
// wildmatch.Check) or that no workspace path could match.
func CheckPattern(pattern string) error {
	if err := wildmatch.Check(pattern); err != nil {
		return invalid("%v", err)
	}
	if strings.HasPrefix(pattern, Workspace+"/") {
		return invalid("bad glob pattern %q: write it relative to the workspace root (%q)",
			pattern, strings.TrimPrefix(pattern, Workspace+"/"))
	}
	for part := range strings.SplitSeq(strings.Trim(pattern, "/"), "/") {
		if part == "." || part == ".." || part == "" {
			return invalid("bad glob pattern %q: empty, . and .. components never match a workspace path", pattern)
		}
	}
	return nil
}

// CheckRule reports a deny rule that is not a valid Go regular expression,
// or that is empty (it would deny every command).
func CheckRule(rule string) error {
	if strings.TrimSpace(rule) == "" {
		return invalid("bad deny rule %q: empty, it would deny every command", rule)
	}
	if _, err := regexp.Compile(rule); err != nil {
		var se *syntax.Error
		if errors.As(err, &se) {
			return invalid("bad deny rule %q: %s: `%s`", rule, se.Code, se.Expr)
		}
		return invalid("bad deny rule %q: %v", rule, err)
	}
	return nil
}

// CheckHookPath reports a hook that is not an absolute path to an
// executable regular file.
func CheckHookPath(hook string) error {
	if !filepath.IsAbs(hook) {
		return invalid("pre-tool hook %q: want an absolute path", hook)
	}
	info, err := os.Stat(hook)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return invalid("pre-tool hook %s: no such file", hook)
	case err != nil:
		return invalid("pre-tool hook %s: %v", hook, err)
	case !info.Mode().IsRegular():
		return invalid("pre-tool hook %s: not a regular file", hook)
	case info.Mode().Perm()&0o111 == 0:
		return invalid("pre-tool hook %s: not executable (chmod +x it)", hook)
	}
	return nil
}

// ProtectedPath reports whether the tool path p (relative to the
// workspace, or absolute under it) is protected, and by which pattern (see
// Protection.Match). A path outside the workspace, or the workspace
// itself, is not.
func (p Policy) ProtectedPath(toolPath string) (pattern string, ok bool) {
	rel, inside := workspacePath(toolPath)
	if !inside || rel == "" {
		return "", false
	}
	return NewProtection(p.Protected).Match(rel)
}

// DeniedCommand reports whether a deny rule matches the command line, and
// which. A rule that does not compile denies everything: Validate catches
// it before a run, and a policy that was never validated fails closed.
func (p Policy) DeniedCommand(cmd string) (rule string, ok bool) {
	for _, r := range p.DenyCommands {
		re, err := regexp.Compile(r)
		if err != nil || re.MatchString(cmd) {
			return r, true
		}
	}
	return "", false
}

// workspacePath turns a tool's path into a clean workspace-relative one;
// inside is false when it leaves the workspace.
func workspacePath(p string) (rel string, inside bool) {
	if path.IsAbs(p) {
		if p != Workspace && !strings.HasPrefix(p, Workspace+"/") {
			return "", false
		}
		p = strings.TrimPrefix(p, Workspace)
		p = strings.TrimLeft(p, "/")
	}
	p = path.Clean(p)
	switch {
	case p == ".":
		return "", true
	case p == ".." || strings.HasPrefix(p, "../"):
		return "", false
	}
	return p, true
}
