package attend

import (
	"context"
	"fmt"
	"strings"

	"github.com/runner-dev/runner/agent"
	"github.com/runner-dev/runner/gitops"
)

// maxDiffLines is how much of a file change's diff is shown before asking.
const maxDiffLines = 200

// rules are the standing permissions given with "always": tools allowed
// without asking, and command prefixes.
type rules struct {
	tools    map[string]bool
	prefixes []string
}

// allows returns the rule that lets req run without asking, or "".
// A command prefix allows only a simple command: one with no shell
// operator after which a second command could follow, so that "go test"
// always allowed never lets "go test; curl ..." through.
func (r *rules) allows(req agent.ApprovalRequest) string {
	if r.tools[req.Tool] {
		return "always " + req.Tool
	}
	if req.Tool != "run_command" || !simpleCommand(req.Command) {
		return ""
	}
	cmd := strings.TrimSpace(req.Command)
	for _, p := range r.prefixes {
		if cmd == p || strings.HasPrefix(cmd, p+" ") {
			return "commands starting with " + p
		}
	}
	return ""
}

// simpleCommand reports whether cmd is one command with arguments: no
// separator, pipe, substitution, redirection, subshell or line break.
func simpleCommand(cmd string) bool {
	return !strings.ContainsAny(cmd, ";&|`$<>()\n\r\\{}") && strings.TrimSpace(cmd) != ""
}

// Approve shows a call that is about to run and asks whether it may:
// y (yes, this once), n (no, with a reason the model sees), a (always for
// this tool) or, for a command, p (always for commands starting with a
// prefix, simple commands only). A call a standing rule allows is not
// asked about. It returns the context's error at once when the context
// ends at the prompt (Ctrl-C), and ErrClosed when the input ends.
func (c *Console) Approve(ctx context.Context, req agent.ApprovalRequest) (agent.Approval, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if rule := c.rules.allows(req); rule != "" {
		return agent.Approval{Allow: true, Rule: rule}, nil
	}
	c.show(req)
	choices := "[y]es, [n]o, [a]lways for " + req.Tool
	if req.Tool == "run_command" {
		choices += ", [p]refix"
	}
	for {
		c.p.Prompt("Allow? %s: ", choices)
		line, err := c.readLine(ctx)
		if err != nil {
			return agent.Approval{}, err
		}
		switch strings.ToLower(strings.TrimSpace(line)) {
		case "y", "yes":
			return agent.Approval{Allow: true}, nil
		case "n", "no":
			c.p.Prompt("Why not (the agent reads this; empty for no reason): ")
			reason, err := c.readLine(ctx)
			if err != nil {
				return agent.Approval{}, err
			}
			return agent.Approval{Reason: strings.TrimSpace(reason)}, nil
		case "a", "always":
			if c.rules.tools == nil {
				c.rules.tools = map[string]bool{}
			}
			c.rules.tools[req.Tool] = true
			c.p.Note("%s is allowed from now on, without asking.", req.Tool)
			return agent.Approval{Allow: true}, nil
		case "p", "prefix":
			if req.Tool != "run_command" {
				break
			}
			if _, ok, err := c.askPrefix(ctx, req.Command); err != nil {
				return agent.Approval{}, err
			} else if ok {
				return agent.Approval{Allow: true}, nil
			}
			continue
		}
		c.p.Note("Answer y, n or a%s.", map[bool]string{true: " or p", false: ""}[req.Tool == "run_command"])
	}
}

// askPrefix asks which prefix to allow from now on (the command's first
// word by default) and adds it when it is a prefix of the command.
func (c *Console) askPrefix(ctx context.Context, command string) (string, bool, error) {
	def := strings.Fields(command)
	if len(def) == 0 {
		return "", false, nil
	}
	c.p.Prompt("Allow from now on every simple command starting with [%s]: ", def[0])
	line, err := c.readLine(ctx)
	if err != nil {
		return "", false, err
	}
	prefix := strings.Join(strings.Fields(line), " ")
	if prefix == "" {
		prefix = def[0]
	}
	if cmd := strings.Join(strings.Fields(command), " "); cmd != prefix && !strings.HasPrefix(cmd, prefix+" ") {
		c.p.Note("%q is not how this command starts.", prefix)
		return "", false, nil
	}
	if !simpleCommand(prefix) {
		c.p.Note("A prefix may hold no shell operator.")
		return "", false, nil
	}
	c.rules.prefixes = append(c.rules.prefixes, prefix)
	c.p.Note("Simple commands starting with %q are allowed from now on.", prefix)
	return prefix, true, nil
}

// show prints the call: the command, or the file and the diff of its
// change, escaped and indented.
func (c *Console) show(req agent.ApprovalRequest) {
	c.p.Note("")
	switch req.Tool {
	case "run_command":
		c.p.Note("The agent wants to run:")
		c.p.Excerpt("  | ", req.Command)
	default:
		verb := "change"
		if req.Old == "" {
			verb = "create"
		}
		c.p.Note("The agent wants to %s %s (%s):", verb, req.Path, req.Tool)
		lines, added, deleted, omitted, err := gitops.TextDiff(req.Old, req.New, maxDiffLines)
		if err != nil {
			c.p.Note("  (no diff: %v)", err)
			return
		}
		c.p.Excerpt("  ", strings.Join(lines, "\n"))
		if omitted > 0 {
			c.p.Note("  ... %d more line(s) of diff not shown", omitted)
		}
		c.p.Note("  %s", fmt.Sprintf("+%d -%d", added, deleted))
	}
}
