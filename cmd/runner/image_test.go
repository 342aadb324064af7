package main

import (
	"os/exec"
	"strings"
	"testing"

	"github.com/runner-dev/runner/internal/cli"
	"github.com/runner-dev/runner/internal/dockertest"
)

// Packages of Dockerfile.sandbox, given to the local base image so that the
// build installs nothing and needs no network.
var sandboxPackages = []string{"bash", "ca-certificates", "coreutils", "curl", "diffutils", "file", "findutils",
	"g++", "gcc", "git", "grep", "jq", "less", "libc6-dev", "make", "openssh-client", "patch", "procps",
	"python3", "sed", "tar", "unzip", "util-linux", "xz-utils"}

// With no engine, every command that needs one is a configuration error
// with a hint.
func TestDaemonUnreachable(t *testing.T) {
	t.Setenv("DOCKER_HOST", "unix:///nonexistent.sock")
	for _, args := range [][]string{
		{"cleanup"},
		{"cleanup", "--dry-run"},
		{"image", "check"},
		{"image", "build"},
	} {
		t.Run(strings.Join(args, " "), func(t *testing.T) {
			res := runMain(t, args...)
			if res.code != cli.ExitUsage {
				t.Fatalf("exit code %d, want %d\n%s", res.code, cli.ExitUsage, res)
			}
			got := nonEmptyLines(res.stderr)
			if len(got) != 2 || !strings.HasPrefix(got[0], "runner: ") || !strings.Contains(got[0], "cannot reach the Docker daemon") ||
				got[1] != "hint: start Docker or set DOCKER_HOST" {
				t.Errorf("stderr:\n%s\nwant the error and the hint", res.stderr)
			}
		})
	}
}

func TestImageCheck(t *testing.T) {
	busybox := dockertest.Busybox(t)
	tests := []struct {
		name       string
		args       []string
		wantCode   int
		wantStdout string
		wantStderr []string
	}{
		{"present", []string{"image", "check", "--image", busybox}, cli.ExitOK, "image " + busybox + " is present", nil},
		{"present, JSON", []string{"--json", "image", "check", "--image", busybox}, cli.ExitOK,
			"{\n  \"image\": \"" + busybox + "\",\n  \"present\": true\n}", nil},
		{"missing", []string{"image", "check", "--image", "runner-test-absent:none"}, cli.ExitUsage, "", []string{
			"runner: image runner-test-absent:none not found",
			"hint: pull or build it (`docker pull runner-test-absent:none`), or, for runner's own sandbox image under that name, `runner image build --tag runner-test-absent:none`",
		}},
		{"missing, JSON", []string{"--json", "image", "check", "--image", "runner-test-absent:none"}, cli.ExitUsage,
			"{\n  \"image\": \"runner-test-absent:none\",\n  \"present\": false\n}", []string{
				"runner: image runner-test-absent:none not found",
				"hint: pull or build it (`docker pull runner-test-absent:none`), or, for runner's own sandbox image under that name, `runner image build --tag runner-test-absent:none`",
			}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			res := runMain(t, tt.args...)
			if res.code != tt.wantCode || strings.TrimSpace(res.stdout) != tt.wantStdout {
				t.Fatalf("%s\nwant exit code %d and stdout %q", res, tt.wantCode, tt.wantStdout)
			}
			checkLines(t, "stderr", res.stderr, tt.wantStderr)
		})
	}
}

// --log-level debug logs the engine in use on stderr.
func TestDebugLog(t *testing.T) {
	t.Setenv("RUNNER_LOG_LEVEL", "")
	busybox := dockertest.Busybox(t)
	res := runMain(t, "--log-level", "debug", "image", "check", "--image", busybox)
	if res.code != cli.ExitOK {
		t.Fatalf("%s\nwant exit code 0", res)
	}
	if !strings.Contains(res.stderr, "level=DEBUG msg=\"connected to the Docker engine\" host=") {
		t.Errorf("no debug log of the engine:\n%s", res.stderr)
	}
	if res := runMain(t, "image", "check", "--image", busybox); res.stderr != "" {
		t.Errorf("at the default level, stderr = %q, want nothing", res.stderr)
	}
}

func TestImageBuild(t *testing.T) {
	base := dockertest.Debian(t, sandboxPackages...)
	tag := "runner-test-cli-sandbox:" + base[strings.LastIndex(base, "-")+1:]
	t.Cleanup(func() { exec.Command("docker", "image", "rm", tag).Run() })

	res := runMain(t, "image", "build", "--base", base, "--tag", tag)
	if res.code != cli.ExitOK {
		t.Fatalf("image build: %s", res)
	}
	if got := strings.TrimSpace(res.stdout); got != "built image "+tag {
		t.Errorf("stdout %q, want %q", got, "built image "+tag)
	}
	// The build's output streams to stderr.
	if !strings.Contains(res.stderr, "WORKDIR /workspace") {
		t.Errorf("stderr does not show the build:\n%s", res.stderr)
	}
	out, err := exec.Command("docker", "image", "inspect", "--format", "{{.Config.User}} {{.Config.WorkingDir}}", tag).Output()
	if got := strings.TrimSpace(string(out)); err != nil || got != "1000:1000 /workspace" {
		t.Errorf("built image: %q, %v; want user 1000:1000 in /workspace", got, err)
	}
	if res := runMain(t, "image", "check", "--image", tag); res.code != cli.ExitOK {
		t.Errorf("image check after build: %s", res)
	}
}

// A quiet build that fails shows the end of its output, and the failure
// exits with 1.
func TestImageBuildFailure(t *testing.T) {
	base := dockertest.Busybox(t) // no dpkg, no apt-get: the package step fails
	tag := "runner-test-cli-broken:latest"
	t.Cleanup(func() { exec.Command("docker", "image", "rm", tag).Run() })

	res := runMain(t, "image", "build", "--quiet", "--base", base, "--tag", tag)
	if res.code != cli.ExitFailure {
		t.Fatalf("%s\nwant exit code 1", res)
	}
	if res.stdout != "" {
		t.Errorf("stdout %q, want nothing", res.stdout)
	}
	got := nonEmptyLines(res.stderr)
	if len(got) < 2 || !strings.Contains(res.stderr, "apt-get") || !strings.HasPrefix(got[len(got)-1], "runner: build image "+tag+": ") {
		t.Errorf("stderr:\n%s\nwant the build's output, then the error", res.stderr)
	}
}

func TestTailBuffer(t *testing.T) {
	tests := []struct {
		name   string
		writes []string
		want   string
	}{
		{"under the cap", []string{"ab", "cd"}, "abcd"},
		{"exactly the cap", []string{"abcde"}, "abcde"},
		{"over the cap", []string{"abc", "defg"}, "[…]cdefg"},
		{"one write over the cap", []string{"0123456789"}, "[…]56789"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			b := tailBuffer{max: 5}
			for _, w := range tt.writes {
				if n, err := b.Write([]byte(w)); n != len(w) || err != nil {
					t.Fatalf("Write(%q) = %d, %v", w, n, err)
				}
			}
			if got := b.String(); got != tt.want {
				t.Errorf("String() = %q, want %q", got, tt.want)
			}
		})
	}
}
