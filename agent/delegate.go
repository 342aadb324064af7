package agent

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"path"
	"strings"

	"github.com/runner-dev/runner/sandbox"
)

// Names of the tools of sub-agents.
const (
	delegateName   = "delegate"
	applyPatchName = "apply_patch"
)

// DefaultDelegateSteps is a sub-agent's step cap when neither the call
// nor Delegation.MaxSteps sets one.
const DefaultDelegateSteps = 30

// Delegation lets the model hand subtasks to sub-agents with the delegate
// tool. A sub-agent runs the same loop with a fresh context (the system
// prompt and the subtask), the same tools, policy, approval and meter, and
// the same model; its model calls count against the task's steps and
// budget, and its events are nested in the trajectory (Event.Agent). Its
// final summary is the delegate call's result. A sub-agent never spends
// the share kept for the task agent's final call (Config.FinalReserve):
// it ends as budget_exhausted where the task agent would be told to finish.
type Delegation struct {
	// MaxDepth is how deeply sub-agents may nest: 1 lets the agent
	// delegate but not its sub-agents. 0 offers no delegate tool.
	MaxDepth int
	// MaxSteps caps one sub-agent's model calls (the call may ask for
	// fewer); default DefaultDelegateSteps. A sub-agent never gets more
	// than the task has left, less one step for its parent to go on.
	MaxSteps int
	// Isolate starts a sandbox for an isolated sub-agent from the
	// parent's workspace as it is now; nil refuses isolated sub-agents.
	Isolate Isolator

	depth int    // of the agent configured: 0 for the task's agent
	id    string // of the agent configured: "" for the task's agent
}

// Isolator starts a fresh sandbox holding a copy of parent's workspace as
// it is now, leaving parent running and unchanged. Whatever it returns
// (with a nil error) is closed by the caller.
type Isolator func(ctx context.Context, parent sandbox.Sandbox) (Isolated, error)

// Isolated is the sandbox of an isolated sub-agent.
type Isolated interface {
	// Sandbox is where the sub-agent works.
	Sandbox() sandbox.Sandbox
	// Patch stops the sandbox and returns what changed in its workspace
	// since the copy. The changes come from the sandbox: untrusted input.
	Patch(ctx context.Context) (Patch, error)
	// Close removes the sandbox; it is idempotent.
	Close(ctx context.Context) error
}

// Patch is what an isolated sub-agent changed, for its parent to apply
// with apply_patch.
type Patch struct {
	Changes []FileChange
	// Diff shows the changes to the model, already cut to a size.
	Diff string
	// Skipped names what changed but cannot be carried back (symlinks,
	// special files), for the model to know.
	Skipped []string
}

// FileChange is one file of a Patch: written whole with Content and Mode,
// or removed. Base is the file as the sub-agent's copy started with it
// (BaseExists false: there was none), so that a file the parent changed
// since is not overwritten.
type FileChange struct {
	Path       string
	Content    []byte
	Mode       fs.FileMode
	Delete     bool
	Base       []byte
	BaseExists bool
}

// delegation is an agent's place among sub-agents, and the patches its
// isolated sub-agents left.
type delegation struct {
	children int
	patches  map[string]Patch
	nPatches int
	callID   string // the call of the tool running now
}

// delegationTools are the tools the agent is offered for sub-agents.
func (a *Agent) delegationTools() []Tool {
	if a.cfg.Delegate.depth >= a.cfg.Delegate.MaxDepth {
		return nil
	}
	return []Tool{delegateTool{a}, applyPatchTool{a}}
}

type delegateTool struct{ a *Agent }

func (delegateTool) Spec() ToolSpec {
	return ToolSpec{
		Name: delegateName,
		Description: "Hand a self-contained subtask to a sub-agent that starts with a fresh context: it sees only " +
			"the task text you give it (say everything it needs) and has the same tools. It works in this workspace, " +
			"changing it directly, or with isolated: true in a copy of the workspace as it is now (without .git); " +
			"then its changes come back as a patch you may apply with apply_patch. The result is its final summary. " +
			"Its model calls count against your steps and budget.",
		Parameters: schema([]string{"task"},
			prop{"task", "string", "What the sub-agent is to do, complete in itself."},
			prop{"max_steps", "integer", "The most model calls it may make; default and upper bound set by the task."},
			prop{"isolated", "boolean", "Work in a copy of the workspace and return the changes as a patch; default false."},
		),
	}
}

func (t delegateTool) Call(ctx context.Context, _ sandbox.Sandbox, raw json.RawMessage) (string, error) {
	var args struct {
		Task     string `json:"task"`
		MaxSteps int    `json:"max_steps"`
		Isolated bool   `json:"isolated"`
	}
	if err := decodeArgs(raw, &args, "task"); err != nil {
		return "", err
	}
	if strings.TrimSpace(args.Task) == "" {
		return "", &errArgs{"task is empty"}
	}
	return t.a.delegate(ctx, args.Task, args.MaxSteps, args.Isolated)
}

// delegate runs one sub-agent to its end. An isolated sub-agent's sandbox
// is closed whatever happens (a cancel, a panic).
func (a *Agent) delegate(ctx context.Context, task string, asked int, isolated bool) (string, error) {
	steps := a.cfg.Delegate.MaxSteps
	if steps <= 0 {
		steps = DefaultDelegateSteps
	}
	if asked > 0 {
		steps = min(steps, asked)
	}
	// One step is kept for the parent to go on after the sub-agent.
	left := a.cfg.MaxSteps - a.steps - 1
	if left < 1 {
		return "", fmt.Errorf("no steps are left for a sub-agent (%d of %d used)", a.steps, a.cfg.MaxSteps)
	}
	steps = min(steps, left)
	timeLeft := a.timeLeft()
	if timeLeft <= 0 {
		return "", fmt.Errorf("%w: %s", errTimeLimit, a.cfg.TimeLimit)
	}
	sb := a.sb
	var iso Isolated
	if isolated {
		if a.cfg.Delegate.Isolate == nil {
			return "", fmt.Errorf("isolated sub-agents are not available here; delegate without isolated")
		}
		var err error
		iso, err = a.cfg.Delegate.Isolate(ctx, a.sb)
		if err != nil {
			if ctx.Err() != nil {
				return "", ctx.Err()
			}
			return "", fmt.Errorf("the isolated workspace could not be made: %v", err)
		}
		defer iso.Close(context.WithoutCancel(ctx))
		sb = iso.Sandbox()
	}
	a.sub.children++
	id := fmt.Sprint(a.sub.children)
	if a.cfg.Delegate.id != "" {
		id = a.cfg.Delegate.id + "." + id
	}
	cfg := a.cfg
	cfg.MaxSteps, cfg.TimeLimit = steps, timeLeft
	cfg.MaxHeldTime = max(0, a.cfg.MaxHeldTime-a.heldTime())
	cfg.Trajectory = a.cfg.Trajectory.nested(id, a.sub.callID)
	cfg.Delegate.depth, cfg.Delegate.id = a.cfg.Delegate.depth+1, id
	child := New(a.model, sb, Task{ID: a.task.ID, Prompt: task}, cfg)
	out := child.Run(ctx)
	a.steps += out.Steps
	if err := ctx.Err(); err != nil {
		return "", err
	}
	if out.Status == StatusInterrupted {
		// The person attending the run ended it at a prompt.
		return "", fmt.Errorf("%w: sub-agent %s: %s", ErrNotApproved, id, out.Error)
	}
	if out.Status == StatusSandboxError && !isolated {
		return "", fmt.Errorf("%w: sub-agent %s: %s", ErrSandbox, id, out.Error)
	}
	var b strings.Builder
	where := "in this workspace"
	if isolated {
		where = "in an isolated copy of the workspace"
	}
	fmt.Fprintf(&b, "Sub-agent %s worked %s and ended: %s after %d model calls.\n", id, where, out.Status, out.Steps)
	if out.Error != "" {
		fmt.Fprintf(&b, "Error: %s\n", out.Error)
	}
	if out.Summary != "" {
		fmt.Fprintf(&b, "Its summary:\n%s\n", strings.TrimSpace(out.Summary))
	}
	if iso != nil {
		b.WriteString(a.keepPatch(ctx, iso))
	}
	return b.String(), nil
}

// keepPatch takes the isolated sub-agent's changes and keeps them for
// apply_patch, describing them for the model.
func (a *Agent) keepPatch(ctx context.Context, iso Isolated) string {
	p, err := iso.Patch(ctx)
	if err != nil {
		return fmt.Sprintf("\nIts changes could not be taken from its workspace (%v); none can be applied.\n", err)
	}
	var b strings.Builder
	for _, s := range p.Skipped {
		fmt.Fprintf(&b, "Not carried back: %s\n", s)
	}
	if len(p.Changes) == 0 {
		return "\nIt left no changes to apply.\n" + b.String()
	}
	if a.sub.patches == nil {
		a.sub.patches = map[string]Patch{}
	}
	a.sub.nPatches++
	pid := fmt.Sprintf("p%d", a.sub.nPatches)
	a.sub.patches[pid] = p
	return fmt.Sprintf("\nIts changes are patch %s (%d files); nothing is applied yet. Apply them all with "+
		"apply_patch {\"id\":%q}, or leave them.\n%s%s", pid, len(p.Changes), pid, b.String(), p.Diff)
}

type applyPatchTool struct{ a *Agent }

func (applyPatchTool) Spec() ToolSpec {
	return ToolSpec{
		Name: applyPatchName,
		Description: "Apply the patch an isolated sub-agent left (named in the delegate result) to this workspace, " +
			"all of it or, when a file is refused by the task's policy or changed here since the copy, none of it.",
		Parameters: schema([]string{"id"}, prop{"id", "string", "The patch id, such as p1."}),
	}
}

func (t applyPatchTool) Call(ctx context.Context, sb sandbox.Sandbox, raw json.RawMessage) (string, error) {
	var args struct {
		ID string `json:"id"`
	}
	if err := decodeArgs(raw, &args, "id"); err != nil {
		return "", err
	}
	return t.a.applyPatch(ctx, sb, args.ID)
}

// applyPatch applies a kept patch whole, or nothing of it: every file
// passes the policy pipeline as a write_file of its path would (a removal
// is asked about as a write_file with "delete": true), approval included,
// and must still be as the sub-agent's copy found it.
func (a *Agent) applyPatch(ctx context.Context, sb sandbox.Sandbox, id string) (string, error) {
	p, ok := a.sub.patches[id]
	if !ok {
		return "", fmt.Errorf("there is no patch %q to apply (patches are named in delegate results, and apply once)", id)
	}
	for _, c := range p.Changes {
		if clean := path.Clean(c.Path); clean != c.Path || path.IsAbs(clean) || clean == "." || clean == ".." || strings.HasPrefix(clean, "../") {
			return "", fmt.Errorf("the patch was not applied: %q is not a path inside the workspace", c.Path)
		}
		args := map[string]any{"path": c.Path, "content": string(c.Content)}
		if c.Delete {
			args = map[string]any{"path": c.Path, "delete": true}
		}
		raw, _ := json.Marshal(args)
		why := a.refusal(ctx, ToolCall{Name: "write_file", Arguments: string(raw)})
		if ctx.Err() != nil {
			return "", ctx.Err()
		}
		if why != "" {
			return "", fmt.Errorf("the patch was not applied: %s: refused by the task's policy: %s", c.Path, why)
		}
	}
	for _, c := range p.Changes {
		cur, err := sb.ReadFile(ctx, c.Path)
		var same bool
		switch {
		case err == nil:
			same = c.BaseExists && bytes.Equal(cur, c.Base)
		case errors.Is(err, sandbox.ErrNotFound):
			same = !c.BaseExists
		case errors.Is(sandboxErr(err), ErrSandbox):
			return "", sandboxErr(err)
		}
		if !same {
			return "", fmt.Errorf("the patch was not applied: %s changed in this workspace since the sub-agent's copy was made", c.Path)
		}
	}
	// In an attended run the person is asked about each file, as about a
	// write_file (a removal as a write of nothing), after the policy.
	for _, c := range p.Changes {
		raw, _ := json.Marshal(map[string]any{"path": c.Path, "content": string(c.Content)})
		_, ans, err := a.approval(ctx, ToolCall{Name: "write_file", Arguments: string(raw)})
		if err != nil {
			return "", err
		}
		if !ans.Allow {
			reason := strings.TrimSpace(ans.Reason)
			if reason == "" {
				reason = "no reason given"
			}
			return "", fmt.Errorf("the patch was not applied: %s was not approved by the person attending the run, who said: %s", c.Path, reason)
		}
	}
	for _, c := range p.Changes {
		if c.Delete {
			res, err := sb.Exec(ctx, "rm -f -- "+shellQuote(sandbox.Workdir+"/"+c.Path), sandbox.ExecOptions{Timeout: resolveTimeout})
			if err != nil {
				return "", fmt.Errorf("%w: apply patch: %w", ErrSandbox, err)
			}
			if res.ExitCode != 0 {
				return "", fmt.Errorf("the patch was applied in part: removing %s failed: %s", c.Path, strings.TrimSpace(res.Output))
			}
			continue
		}
		if err := sb.WriteFile(ctx, c.Path, c.Content, c.Mode); err != nil {
			if errors.Is(sandboxErr(err), ErrSandbox) {
				return "", sandboxErr(err)
			}
			return "", fmt.Errorf("the patch was applied in part: writing %s failed: %v", c.Path, err)
		}
	}
	delete(a.sub.patches, id)
	return fmt.Sprintf("Applied patch %s: %d files.", id, len(p.Changes)), nil
}
