// The search server is an MCP server for tests, over stdio: web_search
// asks the HTTP fixture at $SEARCH_URL and numbers its sources; env shows
// the process's environment; hang never answers; die ends the process.
// It writes its pid to $SERVER_PID_FILE when that is set.
package main

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"os"
	"strings"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

type query struct {
	Query string `json:"query" jsonschema:"what to search for"`
}

type none struct{}

func main() {
	if f := os.Getenv("SERVER_PID_FILE"); f != "" {
		os.WriteFile(f, []byte(fmt.Sprint(os.Getpid())), 0o644)
	}
	s := mcp.NewServer(&mcp.Implementation{Name: "search"}, nil)
	mcp.AddTool(s, &mcp.Tool{Name: "web_search", Description: "Search the web; cite results as [n]."},
		func(ctx context.Context, _ *mcp.CallToolRequest, q query) (*mcp.CallToolResult, any, error) {
			resp, err := http.Get(os.Getenv("SEARCH_URL") + "?q=" + url.QueryEscape(q.Query))
			if err != nil {
				return nil, nil, err
			}
			defer resp.Body.Close()
			var hits []struct{ Title, URL, Snippet string }
			if err := json.NewDecoder(resp.Body).Decode(&hits); err != nil {
				return nil, nil, err
			}
			var b strings.Builder
			for i, h := range hits {
				fmt.Fprintf(&b, "[%d] %s — %s\n%s\n", i+1, h.Title, h.URL, h.Snippet)
			}
			return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: b.String()}}}, nil, nil
		})
	mcp.AddTool(s, &mcp.Tool{Name: "env", Description: "The server's environment."},
		func(ctx context.Context, _ *mcp.CallToolRequest, _ none) (*mcp.CallToolResult, any, error) {
			return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: strings.Join(os.Environ(), "\n")}}}, nil, nil
		})
	mcp.AddTool(s, &mcp.Tool{Name: "hang", Description: "Never answers."},
		func(ctx context.Context, _ *mcp.CallToolRequest, _ none) (*mcp.CallToolResult, any, error) {
			select {}
		})
	mcp.AddTool(s, &mcp.Tool{Name: "die", Description: "Ends the server."},
		func(ctx context.Context, _ *mcp.CallToolRequest, _ none) (*mcp.CallToolResult, any, error) {
			os.Exit(3)
			return nil, nil, nil
		})
	s.Run(context.Background(), &mcp.StdioTransport{})
}
