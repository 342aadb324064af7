package agent

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
)

// ApprovalRequest is a call shown to the person attending a run before it
// runs: a command, or a file change as the file's content before and
// after. Everything in it comes from the model and the sandbox: whoever
// shows it must escape it.
type ApprovalRequest struct {
	Tool    string // run_command, write_file or edit_file
	Command string // run_command
	Path    string // write_file, edit_file: as the model named it
	// Old and New are the file's content before and after the change;
	// Old is empty for a file that does not exist yet.
	Old, New string
}

// Approval is the person's answer.
type Approval struct {
	Allow bool
	// Reason tells the model why the call was refused; empty when allowed.
	Reason string
	// Rule names the standing permission that allowed the call without a
	// question ("always run_command", "commands starting with go test");
	// empty when the person answered this call.
	Rule string
}

// ErrNotApproved is wrapped by errors that end a run because no answer
// could be had (the terminal closed): the run ends as interrupted, as if
// the person had stopped it.
var ErrNotApproved = errors.New("no approval could be asked")

// needsApproval lists the tools whose calls an attended run asks about:
// the ones that change the workspace or run code. Reading and listing
// files, asking and completing never wait for a person.
var needsApproval = map[string]bool{"run_command": true, "write_file": true, "edit_file": true}

// approval asks cfg.Approve about c. ok is false with the reason when the
// person refused; err ends the run (the context ended, or no answer can be
// had). A call whose arguments the tool would refuse anyway (an edit whose
// old_string does not occur once) is not asked about: the tool reports
// its error and changes nothing.
func (a *Agent) approval(ctx context.Context, c ToolCall) (req *ApprovalRequest, ans Approval, err error) {
	if a.cfg.Approve == nil || !needsApproval[c.Name] {
		return nil, Approval{Allow: true}, nil
	}
	r, ok := a.approvalRequest(ctx, c)
	if !ok {
		return nil, Approval{Allow: true}, nil
	}
	ans, err = a.cfg.Approve(ctx, r)
	if err != nil {
		if ctx.Err() != nil {
			return &r, ans, ctx.Err()
		}
		return &r, ans, fmt.Errorf("%w: %v", ErrNotApproved, err)
	}
	return &r, ans, nil
}

// approvalRequest describes c for the person; ok is false when the call
// would fail on its own without changing anything.
func (a *Agent) approvalRequest(ctx context.Context, c ToolCall) (ApprovalRequest, bool) {
	var args struct {
		Command    string `json:"command"`
		Path       string `json:"path"`
		Content    string `json:"content"`
		OldString  string `json:"old_string"`
		NewString  string `json:"new_string"`
		ReplaceAll bool   `json:"replace_all"`
	}
	if json.Unmarshal([]byte(orEmptyObject(c.Arguments)), &args) != nil {
		return ApprovalRequest{}, false
	}
	r := ApprovalRequest{Tool: c.Name, Command: args.Command, Path: args.Path}
	switch c.Name {
	case "run_command":
		return r, true
	case "write_file":
		if old, err := a.sb.ReadFile(ctx, args.Path); err == nil {
			r.Old = string(old)
		}
		r.New = args.Content
		return r, true
	default: // edit_file
		old, err := a.sb.ReadFile(ctx, args.Path)
		if err != nil || args.OldString == "" || args.OldString == args.NewString {
			return r, false
		}
		r.Old = string(old)
		n := strings.Count(r.Old, args.OldString)
		if n == 0 || n > 1 && !args.ReplaceAll {
			return r, false
		}
		r.New = strings.ReplaceAll(r.Old, args.OldString, args.NewString)
		return r, true
	}
}

// approvalRecord is the trajectory's word for an answer.
func approvalRecord(ans Approval) string {
	switch {
	case !ans.Allow:
		return "refused"
	case ans.Rule != "":
		return "approved by rule: " + ans.Rule
	default:
		return "approved"
	}
}
