package mcphost

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/runner-dev/runner/tasks"
)

type echoArgs struct {
	Text string `json:"text" jsonschema:"what to say back"`
}

// A server at a streamable-HTTP URL (the SDK's own HTTP handler): its tools
// are offered namespaced and answer; once the server is gone, a call fails
// with an error, and the task's caller is not harmed.
func TestStreamableHTTPServer(t *testing.T) {
	server := mcp.NewServer(&mcp.Implementation{Name: "remote", Version: "v0.0.1"}, nil)
	mcp.AddTool(server, &mcp.Tool{Name: "echo", Description: "says the text back"},
		func(ctx context.Context, req *mcp.CallToolRequest, in echoArgs) (*mcp.CallToolResult, any, error) {
			return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "heard: " + in.Text}}}, nil, nil
		})
	srv := httptest.NewServer(mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return server }, nil))
	defer srv.Close()

	h, err := Start(context.Background(), []tasks.MCPServer{{Name: "remote", URL: srv.URL, Tools: []string{tasks.AllTools}, Timeout: 5 * time.Second}}, os.Getenv, "test")
	if err != nil {
		t.Fatal(err)
	}
	defer h.Close()
	if got := strings.Join(names(h), ","); got != "remote__echo" {
		t.Fatalf("tools = %s, want remote__echo", got)
	}
	echo := tool(t, h, "remote__echo")
	if !strings.Contains(string(echo.Spec().Parameters), `"text"`) {
		t.Errorf("the tool's schema lacks its argument: %s", echo.Spec().Parameters)
	}
	out, err := echo.Call(context.Background(), nil, json.RawMessage(`{"text":"<b>hi</b>"}`))
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(out, "heard: <b>hi</b>") {
		t.Errorf("result: %q", out)
	}
	srv.CloseClientConnections()
	srv.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if _, err := echo.Call(ctx, nil, json.RawMessage(`{"text":"again"}`)); err == nil {
		t.Error("a call to a server that is gone succeeded")
	}
	if ctx.Err() != nil {
		t.Error("a call to a server that is gone did not end by itself")
	}
}
