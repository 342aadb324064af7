package mcphost

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/runner-dev/runner/agent"
	"github.com/runner-dev/runner/tasks"
)

// build compiles a Go program for the test: the SDK's own example server
// (github.com/modelcontextprotocol/go-sdk/examples/server/hello), a server
// runner's authors did not write, or the test's search server.
func build(t *testing.T, pkg string) string {
	t.Helper()
	out := filepath.Join(t.TempDir(), filepath.Base(pkg))
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	if b, err := exec.CommandContext(ctx, "go", "build", "-o", out, pkg).CombinedOutput(); err != nil {
		t.Fatalf("go build %s: %v\n%s", pkg, err, b)
	}
	return out
}

func tool(t *testing.T, h *Host, name string) agent.Tool {
	t.Helper()
	for _, tl := range h.Tools() {
		if tl.Spec().Name == name {
			return tl
		}
	}
	t.Fatalf("no tool %s among %d", name, len(h.Tools()))
	return nil
}

func names(h *Host) []string {
	var out []string
	for _, tl := range h.Tools() {
		out = append(out, tl.Spec().Name)
	}
	return out
}

// The SDK's own example server: its tool is offered namespaced, with its
// schema, and answers.
func TestSDKExampleServer(t *testing.T) {
	hello := build(t, "github.com/modelcontextprotocol/go-sdk/examples/server/hello")
	h, err := Start(context.Background(), []tasks.MCPServer{{Name: "greeter", Command: []string{hello}, Tools: []string{"*"}, Timeout: time.Minute}}, os.Getenv, "test")
	if err != nil {
		t.Fatal(err)
	}
	defer h.Close()
	greet := tool(t, h, "greeter__greet")
	if !strings.Contains(string(greet.Spec().Parameters), `"name"`) {
		t.Errorf("schema = %s", greet.Spec().Parameters)
	}
	out, err := greet.Call(context.Background(), nil, json.RawMessage(`{"name":"runner"}`))
	if err != nil || out != "Hi runner" {
		t.Fatalf("greet = %q, %v", out, err)
	}
}

// searchServer starts the test's search server with a fixture of results.
func searchServer(t *testing.T, allow []string, env []string, getenv func(string) string) (*Host, string) {
	t.Helper()
	bin := build(t, "./testdata/searchserver")
	fixture := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		json.NewEncoder(w).Encode([]map[string]string{
			{"Title": "Go 1.26 release notes", "URL": "https://go.dev/doc/go1.26", "Snippet": "about " + r.URL.Query().Get("q")},
			{"Title": "The Go blog", "URL": "https://go.dev/blog", "Snippet": "news"},
		})
	}))
	t.Cleanup(fixture.Close)
	pidFile := filepath.Join(t.TempDir(), "pid")
	vars := map[string]string{"SEARCH_URL": fixture.URL, "SERVER_PID_FILE": pidFile}
	all := func(n string) string {
		if v, ok := vars[n]; ok {
			return v
		}
		return getenv(n)
	}
	h, err := Start(context.Background(), []tasks.MCPServer{{
		Name: "search", Command: []string{bin}, Tools: allow, Env: append([]string{"SEARCH_URL", "SERVER_PID_FILE"}, env...),
		Timeout: 2 * time.Second,
	}}, all, "test")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(h.Close)
	return h, pidFile
}

// Only the allowed tools are offered; web search returns numbered sources.
func TestAllowListAndSearch(t *testing.T) {
	h, _ := searchServer(t, []string{"web_search"}, nil, os.Getenv)
	if got := strings.Join(names(h), ","); got != "search__web_search" {
		t.Fatalf("tools = %s, want only the allowed one", got)
	}
	out, err := tool(t, h, "search__web_search").Call(context.Background(), nil, json.RawMessage(`{"query":"iterators"}`))
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(out, "[1] Go 1.26 release notes — https://go.dev/doc/go1.26\nabout iterators") || !strings.Contains(out, "[2] The Go blog") {
		t.Errorf("search result:\n%s", out)
	}
}

// A tool the server does not have is an error at start, naming it.
func TestUnknownAllowedTool(t *testing.T) {
	bin := build(t, "./testdata/searchserver")
	_, err := Start(context.Background(), []tasks.MCPServer{{Name: "search", Command: []string{bin}, Tools: []string{"web_searhc"}, Timeout: time.Second}}, os.Getenv, "test")
	if err == nil || !strings.Contains(err.Error(), `mcp server search: has no tool "web_searhc"`) {
		t.Fatalf("err = %v", err)
	}
}

// The server's process gets PATH and the variables its task names, never
// runner's own environment (the model endpoint's key).
func TestServerEnvironmentIsOnlyWhatIsNamed(t *testing.T) {
	t.Setenv("OPENAI_API_KEY", "sk-test-not-for-the-server-0123456789")
	t.Setenv("REGISTRY_TOKEN", "token-for-the-server-0123456789")
	h, _ := searchServer(t, []string{"env"}, []string{"REGISTRY_TOKEN"}, os.Getenv)
	out, err := tool(t, h, "search__env").Call(context.Background(), nil, json.RawMessage(`{}`))
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(out, "sk-test-not-for-the-server") {
		t.Errorf("the server saw runner's API key:\n%s", out)
	}
	if !strings.Contains(out, "REGISTRY_TOKEN=token-for-the-server-0123456789") {
		t.Errorf("the server did not get the variable it was given:\n%s", out)
	}
	for _, kv := range strings.Split(out, "\n") {
		if name, _, _ := strings.Cut(kv, "="); name != "PATH" && name != "REGISTRY_TOKEN" && name != "SEARCH_URL" && name != "SERVER_PID_FILE" {
			t.Errorf("the server got %s", name)
		}
	}
}

// A tool that hangs fails its call at the timeout; a server that dies
// fails the calls, not the caller; Close ends the process.
func TestHangDieAndClose(t *testing.T) {
	h, pidFile := searchServer(t, []string{"*"}, nil, os.Getenv)
	if _, err := tool(t, h, "search__hang").Call(context.Background(), nil, json.RawMessage(`{}`)); err == nil || !strings.Contains(err.Error(), "did not answer within 2s") {
		t.Errorf("hang: %v", err)
	}
	// The server still answers after a call timed out.
	if _, err := tool(t, h, "search__web_search").Call(context.Background(), nil, json.RawMessage(`{"query":"x"}`)); err != nil {
		t.Errorf("after a timeout: %v", err)
	}
	if _, err := tool(t, h, "search__die").Call(context.Background(), nil, json.RawMessage(`{}`)); err == nil {
		t.Errorf("a dying server's call succeeded")
	}
	if _, err := tool(t, h, "search__web_search").Call(context.Background(), nil, json.RawMessage(`{"query":"x"}`)); err == nil {
		t.Errorf("a dead server's call succeeded")
	}
	h.Close()
	h.Close()
	_ = pidFile
}

// Close ends a server that is alive, and its process is gone.
func TestCloseEndsTheServer(t *testing.T) {
	h, pidFile := searchServer(t, []string{"*"}, nil, os.Getenv)
	data, err := os.ReadFile(pidFile)
	if err != nil {
		t.Fatal(err)
	}
	pid, _ := strconv.Atoi(string(data))
	h.Close()
	deadline := time.Now().Add(30 * time.Second)
	for syscall.Kill(pid, 0) == nil {
		if time.Now().After(deadline) {
			t.Fatalf("server %d still runs after Close", pid)
		}
		time.Sleep(20 * time.Millisecond)
	}
}
