package batch

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

	"github.com/runner-dev/runner/internal/fakellm"
	"github.com/runner-dev/runner/internal/policy"
	"github.com/runner-dev/runner/tasks"
)

// searchTask is a task whose agent may call the test search server's
// web_search, backed by a local fixture; pidFile receives the server's pid.
func searchTask(t *testing.T, r *memRun, id string) (task tasks.Task, pidFile string) {
	t.Helper()
	bin := filepath.Join(t.TempDir(), "searchserver")
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	if out, err := exec.CommandContext(ctx, "go", "build", "-o", bin, "../mcphost/testdata/searchserver").CombinedOutput(); err != nil {
		t.Fatalf("build the search server: %v\n%s", err, out)
	}
	fixture := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		json.NewEncoder(w).Encode([]map[string]string{{"Title": "Spelling of hello", "URL": "https://example.test/hello", "Snippet": "Hello, not Helo."}})
	}))
	t.Cleanup(fixture.Close)
	pidFile = filepath.Join(t.TempDir(), "pid")
	t.Setenv("SEARCH_URL", fixture.URL)
	t.Setenv("SERVER_PID_FILE", pidFile)
	task = r.task(id)
	task.MCPServers = []tasks.MCPServer{{Name: "search", Command: []string{bin}, Tools: []string{"web_search"},
		Env: []string{"SEARCH_URL", "SERVER_PID_FILE"}, Timeout: 30 * time.Second}}
	return task, pidFile
}

// A task's agent calls a host tool over MCP: the result reaches the model
// and the trajectory, the summary cites it, and the server is ended with
// the task.
func TestHostToolOverMCP(t *testing.T) {
	r := newMemRun(t)
	task, pidFile := searchTask(t, r, "search")
	srv := r.script("search",
		fakellm.ToolCall("search__web_search", `{"query":"spelling of hello"}`),
		fixTypo,
		fakellm.ToolCall("complete", `{"summary":"Fixed the spelling of Hello [1].\n\n[1] https://example.test/hello"}`),
	)
	sum := r.run(context.Background(), []tasks.Task{task}, Options{})
	res := sum.Results[0]
	if res.Status != tasks.StatusSucceeded || !strings.Contains(res.Summary, "[1] https://example.test/hello") {
		t.Fatalf("result = %+v", res)
	}
	var tools string
	for _, req := range srv.Requests() {
		for _, m := range req.Messages {
			if m.Role == "tool" {
				tools += m.Content
			}
		}
	}
	if !strings.Contains(tools, "[1] Spelling of hello — https://example.test/hello") {
		t.Errorf("the model never saw the search result: %q", tools)
	}
	if !strings.Contains(toolsOffered(srv), `"search__web_search"`) {
		t.Errorf("the host tool was not offered")
	}
	traj, err := os.ReadFile(filepath.Join(r.store.Dir(), "trajectories", "search.1.jsonl"))
	if err != nil || !strings.Contains(string(traj), `"tool":"search__web_search"`) {
		t.Errorf("the trajectory does not record the host tool's call (%v)", err)
	}
	serverEnded(t, pidFile)
}

// The pre-tool hook is asked about host tools too: a refused call never
// reaches the server.
func TestHostToolThroughThePolicy(t *testing.T) {
	r := newMemRun(t)
	task, pidFile := searchTask(t, r, "refused")
	hook := filepath.Join(t.TempDir(), "hook.sh")
	os.WriteFile(hook, []byte("#!/bin/sh\ngrep -q search__ && { echo 'no web search' >&2; exit 2; }\nexit 0\n"), 0o755)
	task.Policy = policy.Policy{Hook: hook, HookTimeout: 10 * time.Second}
	srv := r.script("refused",
		fakellm.ToolCall("search__web_search", `{"query":"x"}`),
		fixTypo, complete,
	)
	sum := r.run(context.Background(), []tasks.Task{task}, Options{})
	if sum.Results[0].Status != tasks.StatusSucceeded {
		t.Fatalf("result = %+v", sum.Results[0])
	}
	reqs := srv.Requests()
	var first string
	for _, m := range reqs[1].Messages {
		if m.Role == "tool" {
			first = m.Content
		}
	}
	if !strings.Contains(first, "Blocked by the task's policy") || strings.Contains(first, "Spelling") {
		t.Errorf("the hook did not refuse the host tool: %q", first)
	}
	serverEnded(t, pidFile)
}

// toolsOffered is the tools of the first request, as JSON.
func toolsOffered(srv *fakellm.Server) string {
	reqs := srv.Requests()
	if len(reqs) == 0 {
		return ""
	}
	b, _ := json.Marshal(reqs[0].Tools)
	return string(b)
}

// serverEnded waits until the server whose pid is in pidFile is gone.
func serverEnded(t *testing.T, pidFile string) {
	t.Helper()
	data, err := os.ReadFile(pidFile)
	if err != nil {
		t.Fatalf("the server never started: %v", err)
	}
	pid, _ := strconv.Atoi(string(data))
	deadline := time.Now().Add(30 * time.Second)
	for syscall.Kill(pid, 0) == nil {
		if time.Now().After(deadline) {
			t.Fatalf("the server (pid %d) outlived its task", pid)
		}
		time.Sleep(20 * time.Millisecond)
	}
}
