package agent

import (
	"context"
	"encoding/json"
	"fmt"

	"github.com/runner-dev/runner/internal/policy"
	"github.com/runner-dev/runner/sandbox"
)

// refusal returns why the task's policy refuses the call, or "" when it
// may run. In order: write_file and edit_file on a protected path, a
// run_command matching a deny rule, then the pre-tool hook, asked about
// every tool but complete. A refused call never reaches the sandbox.
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
