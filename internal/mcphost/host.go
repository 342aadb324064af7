// Package mcphost starts a task's servers of host tools (the Model Context
// Protocol) and offers their tools to the agent. The servers run on the
// host, outside the sandbox: each gets only the environment its task names,
// each call is bounded in time and size, a server that hangs or dies fails
// the call (never the task), and every server is ended with the task.
package mcphost

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"slices"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/runner-dev/runner/agent"
	"github.com/runner-dev/runner/sandbox"
	"github.com/runner-dev/runner/tasks"
)

// Separator joins a server's name and a tool's name in the name the model
// sees: the Chat Completions API allows no '.' or '/' in a function name.
const Separator = "__"

// MaxResult caps the bytes of one result kept from a server.
const MaxResult = 1 << 20

// startTimeout bounds starting a server and listing its tools.
const startTimeout = 30 * time.Second

// Host holds the running servers of one task.
type Host struct {
	sessions []*mcp.ClientSession
	tools    []agent.Tool
	once     sync.Once
}

// Start starts every server, lists its tools and keeps those its task
// allows. getenv reads the host's environment for the names a server's env
// lists. An error names the server; the servers already started are
// ended.
func Start(ctx context.Context, servers []tasks.MCPServer, getenv func(string) string, version string) (*Host, error) {
	h := &Host{}
	for _, s := range servers {
		if err := h.start(ctx, s, getenv, version); err != nil {
			h.Close()
			return nil, fmt.Errorf("mcp server %s: %w", s.Name, err)
		}
	}
	return h, nil
}

// Tools are the allowed tools of every server, named SERVER__TOOL.
func (h *Host) Tools() []agent.Tool { return h.tools }

// Close ends every server: stdin closed, then SIGTERM, then SIGKILL.
// It is safe to call more than once.
func (h *Host) Close() {
	h.once.Do(func() {
		for _, s := range h.sessions {
			s.Close()
		}
	})
}

func (h *Host) start(ctx context.Context, s tasks.MCPServer, getenv func(string) string, version string) error {
	var t mcp.Transport
	if s.URL != "" {
		t = &mcp.StreamableClientTransport{Endpoint: s.URL, MaxRetries: -1}
	} else {
		// Not tied to ctx: Close ends the process; a context would kill it
		// without the polite steps.
		cmd := exec.Command(s.Command[0], s.Command[1:]...)
		cmd.Env = serverEnv(s.Env, getenv)
		cmd.Stderr = nil // discarded: a server's diagnostics are not the model's
		cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
		t = &mcp.CommandTransport{Command: cmd, TerminateDuration: 2 * time.Second}
	}
	client := mcp.NewClient(&mcp.Implementation{Name: "runner", Version: version}, nil)
	sctx, cancel := context.WithTimeout(ctx, startTimeout)
	defer cancel()
	session, err := client.Connect(sctx, t, nil)
	if err != nil {
		return fmt.Errorf("start: %w", err)
	}
	h.sessions = append(h.sessions, session)
	found := map[string]bool{}
	for tool, err := range session.Tools(sctx, nil) {
		if err != nil {
			return fmt.Errorf("list tools: %w", err)
		}
		found[tool.Name] = true
		if !slices.Contains(s.Tools, tasks.AllTools) && !slices.Contains(s.Tools, tool.Name) {
			continue
		}
		spec, err := toolSpec(s.Name, tool)
		if err != nil {
			return err
		}
		h.tools = append(h.tools, &hostTool{spec: spec, name: tool.Name, session: session, timeout: s.Timeout})
	}
	for _, want := range s.Tools {
		if want != tasks.AllTools && !found[want] {
			return fmt.Errorf("has no tool %q (it has %s)", want, strings.Join(sortedKeys(found), ", "))
		}
	}
	return nil
}

// serverEnv is the environment of a server's process: PATH, and the host
// variables its task names, nothing else.
func serverEnv(names []string, getenv func(string) string) []string {
	env := []string{"PATH=" + os.Getenv("PATH")}
	for _, n := range names {
		if v := getenv(n); v != "" {
			env = append(env, n+"="+v)
		}
	}
	return env
}

func toolSpec(server string, t *mcp.Tool) (agent.ToolSpec, error) {
	name := server + Separator + t.Name
	if len(name) > 64 || strings.ContainsFunc(t.Name, func(r rune) bool {
		return !(r == '_' || r == '-' || r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9')
	}) {
		return agent.ToolSpec{}, fmt.Errorf("tool %q: its name cannot be offered to the model (letters, digits, '_' and '-', at most 64 with the server's name)", t.Name)
	}
	params, err := json.Marshal(t.InputSchema)
	if err != nil {
		return agent.ToolSpec{}, fmt.Errorf("tool %q: its input schema: %w", t.Name, err)
	}
	desc := t.Description
	if desc == "" {
		desc = t.Title
	}
	return agent.ToolSpec{Name: name, Description: desc + " (a host tool of the " + server + " server)", Parameters: params}, nil
}

// hostTool is one allowed tool of a server.
type hostTool struct {
	spec    agent.ToolSpec
	name    string
	session *mcp.ClientSession
	timeout time.Duration
}

func (t *hostTool) Spec() agent.ToolSpec { return t.spec }

// Call calls the tool on its server, within the server's timeout. Every
// failure is the call's (an error the model reads), never the sandbox's.
func (t *hostTool) Call(ctx context.Context, _ sandbox.Sandbox, raw json.RawMessage) (string, error) {
	var args map[string]any
	if err := json.Unmarshal(raw, &args); err != nil {
		return "", fmt.Errorf("the arguments are not a JSON object: %v", err)
	}
	cctx, cancel := context.WithTimeout(ctx, t.timeout)
	defer cancel()
	res, err := t.session.CallTool(cctx, &mcp.CallToolParams{Name: t.name, Arguments: args})
	switch {
	case ctx.Err() != nil:
		return "", ctx.Err()
	case errors.Is(cctx.Err(), context.DeadlineExceeded):
		return "", fmt.Errorf("the %s tool did not answer within %s", t.spec.Name, t.timeout)
	case err != nil:
		return "", fmt.Errorf("the %s tool failed: %v", t.spec.Name, err)
	}
	text := resultText(res)
	if res.IsError {
		return "", errors.New(text)
	}
	return text, nil
}

// resultText joins the text parts of a result, capped at MaxResult; other
// parts are named, not shown.
func resultText(res *mcp.CallToolResult) string {
	var b strings.Builder
	for _, c := range res.Content {
		if b.Len() > 0 {
			b.WriteString("\n")
		}
		switch c := c.(type) {
		case *mcp.TextContent:
			b.WriteString(c.Text)
		default:
			fmt.Fprintf(&b, "[%T content not shown]", c)
		}
		if b.Len() > MaxResult {
			return b.String()[:MaxResult] + "\n[result cut at " + fmt.Sprint(MaxResult) + " bytes]"
		}
	}
	if b.Len() == 0 && res.StructuredContent != nil {
		if data, err := json.Marshal(res.StructuredContent); err == nil {
			b.Write(data[:min(len(data), MaxResult)])
		}
	}
	return b.String()
}

func sortedKeys(m map[string]bool) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	return keys
}
