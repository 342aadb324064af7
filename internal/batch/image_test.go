package batch

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"math/big"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/moby/moby/client"

	"github.com/runner-dev/runner/internal/dockertest"
	"github.com/runner-dev/runner/internal/fakellm"
	"github.com/runner-dev/runner/sandbox"
	"github.com/runner-dev/runner/tasks"
)

// builder is the engine's BuildContext, removing what it built at the end
// of the test.
func builder(t *testing.T) func(context.Context, sandbox.ContextBuildOptions) (sandbox.BuiltImage, error) {
	e, c := dockertest.Engine(t), dockertest.Client(t)
	return func(ctx context.Context, opt sandbox.ContextBuildOptions) (sandbox.BuiltImage, error) {
		img, err := e.BuildContext(ctx, opt)
		if err == nil && !img.Cached {
			t.Cleanup(func() {
				c.ImageRemove(context.Background(), img.Ref, client.ImageRemoveOptions{Force: true, PruneChildren: true})
			})
		}
		return img, err
	}
}

// image: devcontainer builds the repository's devcontainer.json Dockerfile
// with its arguments, gives the sandbox its containerEnv and the task's
// ca_certs, and obeys none of what would change the isolation, saying so in
// the result.
func TestTaskRunsInTheRepositorysDevcontainer(t *testing.T) {
	repo := fixtureRepo(t)
	greeting := "hello-" + randomSuffix()
	os.MkdirAll(filepath.Join(repo, ".devcontainer"), 0o755)
	os.WriteFile(filepath.Join(repo, ".devcontainer", "Dockerfile"), []byte("FROM "+dockertest.Busybox(t)+
		"\nARG GREETING\nRUN echo $GREETING > /greeting\nUSER root\n"), 0o644)
	os.WriteFile(filepath.Join(repo, ".devcontainer", "devcontainer.json"), []byte(`{
		// comments and trailing commas are allowed
		"build": {"dockerfile": "Dockerfile", "args": {"GREETING": "`+greeting+`"}},
		"containerEnv": {"FROM_DEVCONTAINER": "yes", "HOME_TOKEN": "${localEnv:HOME}"},
		"runArgs": ["--privileged"],
		"privileged": true,
		"onCreateCommand": "echo made-by-setup > /made",
		"postCreateCommand": ["sh", "-c", "cp \"$SSL_CERT_FILE\" /setup-trusted; echo \"$FROM_DEVCONTAINER\" >> /made"],
	}`), 0o644)
	git(t, repo, "add", "-A")
	git(t, repo, "commit", "-q", "-m", "devcontainer")
	ca := testCAPEM(t)
	task := tasks.Task{Build: &tasks.ImageBuild{Devcontainer: true, Source: tasks.Source{File: "tasks.yaml", Line: 3}}, CACerts: ca}
	// The lifecycle commands run as the task's setup, in order, with the
	// configuration's environment and the task's certificates.
	r := runOne(t, context.Background(), repo, task, func(d *Deps) { d.BuildImage, d.Environments = builder(t), dockertest.Engine(t) },
		fakellm.ToolCall("run_command", `{"command":"{ cat /greeting; echo \"$FROM_DEVCONTAINER ${HOME_TOKEN:-unset}\"; id -u; grep CapEff /proc/self/status; cat \"$SSL_CERT_FILE\"; } > out.txt; cat /made > setup.txt; cmp /setup-trusted \"$SSL_CERT_FILE\" >> setup.txt && echo same-ca >> setup.txt"}`),
		fakellm.ToolCall("complete", `{"summary":"done"}`),
	)
	if r.Status != tasks.StatusSucceeded {
		t.Fatalf("result: %s %s", r.Status, r.Error)
	}
	if got, want := git(t, repo, "show", "agent/t:out.txt"), greeting+"\nyes unset\n1000\nCapEff:\t0000000000000000\n"+strings.TrimSpace(string(ca)); got != want {
		t.Errorf("in the sandbox:\n%s\nwant:\n%s", got, want)
	}
	if got, want := git(t, repo, "show", "agent/t:setup.txt"), "made-by-setup\nyes\nsame-ca"; got != want {
		t.Errorf("what the devcontainer's lifecycle commands left:\n%s\nwant:\n%s", got, want)
	}
	if r.Setup == nil || r.Setup.Duration <= 0 {
		t.Errorf("result's setup: %+v; want the setup phase recorded", r.Setup)
	}
	warnings := strings.Join(r.Warnings, "\n")
	for _, want := range []string{
		".devcontainer/devcontainer.json: runArgs not obeyed",
		".devcontainer/devcontainer.json: privileged not obeyed: the sandbox is never privileged",
		".devcontainer/devcontainer.json: containerEnv.HOME_TOKEN not obeyed",
		"the image's USER root not obeyed",
	} {
		if !strings.Contains(warnings, want) {
			t.Errorf("warnings lack %q:\n%s", want, warnings)
		}
	}
}

// testCAPEM is a self-signed CA certificate in PEM.
func testCAPEM(t *testing.T) []byte {
	key, _ := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	tmpl := &x509.Certificate{SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "test CA"},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour), IsCA: true, BasicConstraintsValid: true}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		t.Fatal(err)
	}
	return pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der})
}

// A Dockerfile path that is not in the repository at the task's ref ends
// the task before any model call, naming the path and where the task
// file asked for it.
func TestTaskWithAMissingDockerfile(t *testing.T) {
	repo := fixtureRepo(t)
	task := tasks.Task{Build: &tasks.ImageBuild{Dockerfile: "ci/Dockerfile", Source: tasks.Source{File: "tasks.yaml", Line: 7}}}
	r := runOne(t, context.Background(), repo, task, func(d *Deps) { d.BuildImage = builder(t) })
	want := "image dockerfile:ci/Dockerfile (tasks.yaml:7): build: Dockerfile ci/Dockerfile does not exist in the repository"
	if r.Status != tasks.StatusSandboxError || !strings.Contains(r.Error, want) || r.Calls != 0 {
		t.Errorf("result: %s, %d calls, %q; want sandbox_error, no call, naming %q", r.Status, r.Calls, r.Error, want)
	}
}

func TestWithDefaultImage(t *testing.T) {
	own := &tasks.ImageBuild{Dockerfile: "Dockerfile", Source: tasks.Source{File: "q.yaml", Line: 2}}
	for _, tc := range []struct {
		name  string
		task  tasks.Task
		flag  string
		image string
		build *tasks.ImageBuild
	}{
		{"nothing set", tasks.Task{}, "", sandbox.DefaultImage, nil},
		{"the flag's image", tasks.Task{}, "python:3.12", "python:3.12", nil},
		{"the flag's build", tasks.Task{}, "dockerfile:ci/Dockerfile", "", &tasks.ImageBuild{Dockerfile: "ci/Dockerfile", Source: tasks.Source{File: "--image"}}},
		{"the flag's devcontainer", tasks.Task{}, "devcontainer", "", &tasks.ImageBuild{Devcontainer: true, Source: tasks.Source{File: "--image"}}},
		{"the task's image wins", tasks.Task{Image: "node:22"}, "devcontainer", "node:22", nil},
		{"the task's build wins", tasks.Task{Build: own}, "python:3.12", "", own},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := withDefaultImage(tc.task, tc.flag)
			if got.Image != tc.image || !reflect.DeepEqual(got.Build, tc.build) {
				t.Errorf("got image %q build %+v, want %q %+v", got.Image, got.Build, tc.image, tc.build)
			}
		})
	}
}
