package agent

import (
	"context"
	"encoding/json"
	"fmt"
	"path"
	"strings"
	"time"

	"github.com/runner-dev/runner/internal/policy"
	"github.com/runner-dev/runner/sandbox"
)

// refusal returns why the task's policy refuses the call, or "" when it
// may run. In order: write_file and edit_file on a protected path (as
// named, or as the sandbox resolves it through symlinks), a run_command
// matching a deny rule, then the pre-tool hook, asked about every tool but
// complete. A refused call never reaches the sandbox.
func (a *Agent) refusal(ctx context.Context, c ToolCall) string {
	p := a.cfg.Policy
	args := json.RawMessage(orEmptyObject(c.Arguments))
	var fields struct {
		Path    *string `json:"path"`
		Command *string `json:"command"`
	}
	_ = json.Unmarshal(args, &fields) // arguments of the wrong shape are the tool's to report
	switch c.Name {
	case "write_file", "edit_file":
		if fields.Path != nil {
			if pattern, ok := p.ProtectedPath(*fields.Path); ok {
				return fmt.Sprintf("%s is a protected path (%s) that may not be changed", *fields.Path, pattern)
			}
			if real, pattern, ok := a.protectedThroughSymlink(ctx, *fields.Path); ok {
				return fmt.Sprintf("%s leads through a symlink to %s, a protected path (%s) that may not be changed",
					*fields.Path, real, pattern)
			}
		}
	case "run_command":
		if fields.Command != nil {
			if rule, ok := p.DeniedCommand(*fields.Command); ok {
				return fmt.Sprintf("the command matches the deny rule `%s`", rule)
			}
		}
	case completeName:
		return ""
	}
	d, _ := p.CheckHook(ctx, policy.HookCall{TaskID: a.task.ID, Tool: c.Name, Arguments: args, Workspace: sandbox.Workdir})
	if d.Allow {
		return ""
	}
	return d.Reason
}

// resolveScript prints where a write to the path in $1 (absolute, under
// the workspace) lands: its deepest existing ancestor, or itself, resolved
// through symlinks, followed by the components that do not exist yet.
const resolveScript = `p=$1 rest=
while [ ! -e "$p" ] && [ ! -L "$p" ]; do
	case $p in */*) ;; *) exit 3 ;; esac
	rest=/${p##*/}$rest p=${p%/*}
done
r=$(readlink -f -- "$p") || exit 3
printf '%s%s' "$r" "$rest"`

// protectedThroughSymlink resolves a write_file or edit_file path in the
// sandbox and reports whether it leads, through a symlink, to a protected
// path. It is an early answer for the model, not the boundary: a process
// left running can swap a symlink between this check and the write, and
// the commit-time check (gitops.CommitOptions.Protected) refuses what
// reaches a protected path whatever the way. When the path cannot be
// resolved (the sandbox fails, a dangling symlink) it says no, and the
// write meets the sandbox's own checks.
func (a *Agent) protectedThroughSymlink(ctx context.Context, toolPath string) (real, pattern string, ok bool) {
	p := a.cfg.Policy
	if len(p.Protected) == 0 {
		return "", "", false
	}
	abs := toolPath
	if !path.IsAbs(abs) {
		abs = path.Join(sandbox.Workdir, abs)
	}
	abs = path.Clean(abs)
	if !strings.HasPrefix(abs, sandbox.Workdir+"/") {
		return "", "", false
	}
	res, err := a.sb.Exec(ctx, "set -- "+shellQuote(abs)+"\n"+resolveScript,
		sandbox.ExecOptions{Timeout: resolveTimeout, MaxOutput: 16 << 10})
	if err != nil || res.ExitCode != 0 || res.TimedOut || res.Truncated {
		return "", "", false
	}
	real = res.Stdout
	if !path.IsAbs(real) || real == abs {
		return "", "", false // no symlink on the way: the name was checked
	}
	pattern, ok = p.ProtectedPath(real)
	return strings.TrimPrefix(real, sandbox.Workdir+"/"), pattern, ok
}

// resolveTimeout bounds the resolution of one path in the sandbox.
const resolveTimeout = 10 * time.Second

// shellQuote quotes s for sh.
func shellQuote(s string) string {
	return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
}
