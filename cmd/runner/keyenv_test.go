package main

import (
	"fmt"
	"path/filepath"
	"strings"
	"testing"

	"github.com/runner-dev/runner/internal/cli"
	"github.com/runner-dev/runner/internal/dockertest"
	"github.com/runner-dev/runner/internal/fakellm"
	"github.com/runner-dev/runner/tasks"
)

// The key comes from the variable --api-key-env names and from nowhere
// else: with that variable empty and an endpoint on this machine (which may
// need no key), OPENAI_API_KEY in the environment is not sent instead.
func TestAPIKeyOnlyFromTheNamedVariable(t *testing.T) {
	repo, _ := sourceRepo(t, map[string]string{"a.txt": "a\n"})
	srv, _ := modelServer(t, map[string][]fakellm.Turn{
		"Write.": {
			fakellm.ToolCall("write_file", `{"path":"b.txt","content":"b\n"}`),
			fakellm.ToolCall("complete", `{"summary":"Wrote b.txt."}`),
		},
	})
	file := writeTaskFile(t, fmt.Sprintf(`
tasks: [{id: keyless, repo: %s, prompt: "Write.", image: %s}]
`, repo, dockertest.Busybox(t)))
	out := filepath.Join(t.TempDir(), "out")
	res, pid := runRunner(t, srv, "run", file, "--out", out, "--api-key-env", "RUNNER_TEST_UNSET_API_KEY")
	if res.code != cli.ExitOK {
		t.Fatalf("runner run: %s", res)
	}
	if r := readResultLines(t, out)[0]; r.Status != tasks.StatusSucceeded {
		t.Fatalf("result = %+v; want succeeded", r)
	}
	reqs := srv.Requests()
	if len(reqs) == 0 {
		t.Fatal("the model server saw no request")
	}
	for i, r := range reqs {
		for name, values := range r.Header {
			for _, v := range values {
				if strings.Contains(v, e2eKey) {
					t.Errorf("request %d: header %s carries OPENAI_API_KEY's value", i, name)
				}
			}
		}
	}
	noLeftovers(t, pid)
}
