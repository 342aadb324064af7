package main

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"path/filepath"
	"strings"
	"testing"

	"github.com/runner-dev/runner/internal/cli"
	"github.com/runner-dev/runner/sandbox"
)

// runWithBackend runs the command line args in process with a connect
// that records the backend it was asked for and fails.
func runWithBackend(t *testing.T, args ...string) (res cmdResult, asked []backendFlags) {
	t.Helper()
	var stdout, stderr strings.Builder
	d := newDeps(strings.NewReader(""), &stdout, &stderr, func(string) string { return "" })
	d.connect = func(_ context.Context, _ *slog.Logger, b *backendFlags, _ func(string) string) (sandbox.Backend, error) {
		asked = append(asked, *b)
		return nil, errors.New("no backend in this test")
	}
	root := newRootCmd(d)
	root.SetArgs(args)
	cmd, err := root.ExecuteContextC(t.Context())
	code := cli.ExitOK
	if err != nil {
		if !d.started {
			err = &cli.UsageError{Err: err}
		}
		code = report(&stderr, cmd, err)
	}
	return cmdResult{stdout: stdout.String(), stderr: stderr.String(), code: code}, asked
}

// --backend and the Kubernetes flags reach the backend's connection on
// every command that starts sandboxes; a task file's backend: counts when
// --backend is not given, and the two disagreeing is a usage error.
func TestBackendChoice(t *testing.T) {
	repo, _ := sourceRepo(t, map[string]string{"a.txt": "a\n"})
	plain := writeTaskFile(t, fmt.Sprintf("defaults: {repo: %s}\ntasks:\n  - {id: a, prompt: p}\n", repo))
	onK8s := writeTaskFile(t, fmt.Sprintf("defaults:\n  repo: %s\n  backend: kubernetes\ntasks:\n  - {id: a, prompt: p}\n", repo))
	out := func() string { return filepath.Join(t.TempDir(), "out") }
	k8sFlags := []string{"--backend", "kubernetes", "--namespace", "ns1", "--kube-context", "ctx1", "--egress-probe", "192.0.2.1:443", "--egress-probe", "example.com:80"}
	for _, tt := range []struct {
		name string
		args []string
		want backendFlags
	}{
		{"run default", []string{"run", plain, "--out", out(), "--model", "m"}, backendFlags{}},
		{"run flags", append([]string{"run", plain, "--out", out(), "--model", "m"}, k8sFlags...),
			backendFlags{kind: "kubernetes", namespace: "ns1", kubeContext: "ctx1", egressProbe: []string{"192.0.2.1:443", "example.com:80"}}},
		{"run file", []string{"run", onK8s, "--out", out(), "--model", "m"}, backendFlags{kind: "kubernetes", file: onK8s + ":3"}},
		{"run file and same flag", []string{"run", onK8s, "--out", out(), "--model", "m", "--backend", "kubernetes"}, backendFlags{kind: "kubernetes"}},
		{"exec", append([]string{"exec", "--repo", repo, "--out", out(), "--model", "m", "p"}, k8sFlags...),
			backendFlags{kind: "kubernetes", namespace: "ns1", kubeContext: "ctx1", egressProbe: []string{"192.0.2.1:443", "example.com:80"}}},
		{"cleanup", []string{"cleanup", "--backend", "kubernetes", "--namespace", "ns2"}, backendFlags{kind: "kubernetes", namespace: "ns2"}},
		{"doctor", []string{"doctor", "--backend", "kubernetes", "--kube-context", "c"}, backendFlags{kind: "kubernetes", kubeContext: "c"}},
		{"image check", []string{"image", "check", "--backend", "kubernetes"}, backendFlags{kind: "kubernetes"}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			t.Setenv("OPENAI_API_KEY", "sk-test-0123456789")
			_, asked := runWithBackend(t, tt.args...)
			if len(asked) != 1 {
				t.Fatalf("connect called %d times, want once", len(asked))
			}
			got := asked[0]
			if fmt.Sprint(got) != fmt.Sprint(tt.want) {
				t.Errorf("backend %+v, want %+v", got, tt.want)
			}
		})
	}

	for _, tt := range []struct {
		name string
		args []string
		want string
	}{
		{"unknown backend", []string{"cleanup", "--backend", "podman"}, `runner: --backend "podman": want docker or kubernetes`},
		{"namespace on docker", []string{"cleanup", "--namespace", "x"}, "runner: --namespace is for the kubernetes backend; the sandboxes run with --backend docker"},
		{"probe on docker", []string{"run", plain, "--egress-probe", "a:1", "--model", "m", "--out", out()}, "runner: --egress-probe is for the kubernetes backend"},
		{"bad probe", []string{"doctor", "--backend", "kubernetes", "--egress-probe", "nohost"}, `runner: --egress-probe "nohost": want HOST:PORT`},
		{"bad probe port", []string{"doctor", "--backend", "kubernetes", "--egress-probe", "h:99999"}, `runner: --egress-probe "h:99999": want HOST:PORT with a port from 1 to 65535, got port "99999"`},
		{"file and flag disagree", []string{"run", onK8s, "--backend", "docker", "--model", "m", "--out", out()},
			"runner: --backend docker, but " + onK8s + ":3 says backend: kubernetes; drop one"},
		{"image build", []string{"image", "build", "--backend", "kubernetes"}, "runner: runner image build needs the Docker backend, not --backend kubernetes; build with Docker, then push"},
		{"cache", []string{"cache", "ls", "--backend", "kubernetes"}, "runner: runner cache needs the Docker backend, not --backend kubernetes"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			t.Setenv("OPENAI_API_KEY", "sk-test-0123456789")
			res, asked := runWithBackend(t, tt.args...)
			if res.code != cli.ExitUsage || !strings.Contains(res.stderr, tt.want) {
				t.Errorf("want exit 2 and %q: %s", tt.want, res)
			}
			if len(asked) != 0 {
				t.Errorf("connected to %+v", asked)
			}
		})
	}
}

// What the Kubernetes backend does not offer is refused before anything
// starts, naming each task, its place and the key, at validate and at run.
func TestKubernetesRefusesWhatItLacks(t *testing.T) {
	repo, _ := sourceRepo(t, map[string]string{"a.txt": "a\n", "Dockerfile": "FROM busybox\n"})
	body := fmt.Sprintf(`defaults:
  repo: %s
tasks:
  - {id: fix-1, prompt: p, setup: ["make deps"]}
  - {id: fix-2, prompt: p, image: "dockerfile:Dockerfile"}
  - {id: fix-3, prompt: p, network: {allow: [proxy.example.com]}}
  - {id: fix-4, prompt: p}
`, repo)
	file := writeTaskFile(t, body)
	want := []string{
		file + `:4: task "fix-1": setup is not supported with --backend kubernetes; prepared environments need the Docker backend: put what the setup installs in the image`,
		file + `:5: task "fix-2": image: dockerfile:Dockerfile is not supported with --backend kubernetes; images are built with Docker: build and push the image, then name it in image:`,
		file + `:6: task "fix-3": an egress allowlist (network: {allow: ...}) is not supported with --backend kubernetes; use network: none or bridge`,
	}
	check := func(t *testing.T, res cmdResult, asked []backendFlags, want []string) {
		t.Helper()
		if res.code != cli.ExitUsage {
			t.Errorf("exit code %d, want 2: %s", res.code, res)
		}
		for _, w := range want {
			if !strings.Contains(res.stderr, w) {
				t.Errorf("stderr lacks %q:\n%s", w, res.stderr)
			}
		}
		if strings.Contains(res.stderr, "fix-4") {
			t.Errorf("fix-4 is refused:\n%s", res.stderr)
		}
		if len(asked) != 0 {
			t.Errorf("connected to %+v before refusing", asked)
		}
	}
	t.Setenv("OPENAI_API_KEY", "sk-test-0123456789")
	t.Run("validate", func(t *testing.T) {
		res, asked := runWithBackend(t, "validate", "--backend", "kubernetes", file)
		check(t, res, asked, want)
		if res, _ := runWithBackend(t, "validate", file); res.code != cli.ExitOK {
			t.Errorf("the file on docker: %s", res)
		}
	})
	t.Run("run", func(t *testing.T) {
		res, asked := runWithBackend(t, "run", file, "--backend", "kubernetes", "--model", "m", "--out", filepath.Join(t.TempDir(), "out"))
		check(t, res, asked, want)
	})
	t.Run("backend in the file", func(t *testing.T) {
		inFile := writeTaskFile(t, strings.Replace(body, "defaults:\n", "defaults:\n  backend: kubernetes\n", 1))
		res, asked := runWithBackend(t, "validate", inFile)
		check(t, res, asked, []string{inFile + `:5: task "fix-1": setup is not supported with backend: kubernetes (` + inFile + `:2); prepared environments`})
		res, asked = runWithBackend(t, "run", inFile, "--model", "m", "--out", filepath.Join(t.TempDir(), "out"))
		check(t, res, asked, []string{inFile + `:5: task "fix-1": setup is not supported`})
	})
	t.Run("exec image flag", func(t *testing.T) {
		res, asked := runWithBackend(t, "exec", "--repo", repo, "--backend", "kubernetes", "--image", "devcontainer", "--model", "m", "--id", "one",
			"--out", filepath.Join(t.TempDir(), "out"), "p")
		check(t, res, asked, []string{`task "one": --image devcontainer is not supported with --backend kubernetes; images are built with Docker: build and push the image, then name it in --image`})
	})
}
