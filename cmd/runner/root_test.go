package main

import (
	"encoding/json"
	"log/slog"
	"runtime"
	"strings"
	"testing"

	"github.com/runner-dev/runner/internal/cli"
)

func TestUsageErrors(t *testing.T) {
	tests := []struct {
		name      string
		args      []string
		wantError string // the "runner: " line
		wantUsage string // the usage line that follows
	}{
		{"unknown flag", []string{"validate", "--frobnicate", exampleYAML}, "runner: unknown flag: --frobnicate", "runner validate FILE... [flags]"},
		{"unknown global flag", []string{"--frobnicate"}, "runner: unknown flag: --frobnicate", "runner [command]"},
		{"unknown command", []string{"frobnicate"}, `runner: unknown command "frobnicate" for "runner"`, "runner [command]"},
		{"unknown image command", []string{"image", "frobnicate"}, `runner: unknown command "frobnicate" for "runner image"`, "runner image [command]"},
		{"no task file", []string{"validate"}, "runner: requires at least 1 arg(s), only received 0", "runner validate FILE... [flags]"},
		{"bad log level", []string{"--log-level", "loud", "version"}, `runner: log level "loud": want debug, info, warn or error`, "runner version [flags]"},
		{"json where there is none", []string{"--json", "image", "build"}, "runner: image build has no JSON output", "runner image build [flags]"},
		{"rollback of nothing named", []string{"rollback", "--out", "somewhere"}, "runner: name the tasks whose branches to delete, or give --all", "runner rollback"},
		{"rollback ids and --all", []string{"rollback", "--out", "somewhere", "--all", "t1"}, "runner: give task ids or --all, not both", "runner rollback"},
		{"rollback of two sources", []string{"rollback", "--out", "o", "--repo", "r", "--branch", "b"}, "runner: if any flags in the group [out repo] are set none of the others can be", "runner rollback"},
		{"rollback without a source", []string{"rollback", "--all"}, "runner: at least one of the flags in the group [out repo] is required", "runner rollback"},
		{"rollback of a repo without branch", []string{"rollback", "--repo", "r"}, "runner: if any flags in the group [repo branch] are set they must all be set", "runner rollback"},
		{"unknown provider", []string{"run", "--provider", "gemeni", exampleYAML}, `runner: --provider: unknown provider "gemeni": want one of auto, openai, gemini`, "runner run FILE [flags]"},
		{"unknown provider in exec", []string{"exec", "--provider", "x", "--repo", ".", "do it"}, `runner: --provider: unknown provider "x"`, "runner exec"},
		{"final reserve above half", []string{"run", "--final-reserve", "0.6", exampleYAML}, "runner: --final-reserve 0.6: want a share in [0, 0.5]", "runner run FILE [flags]"},
		{"negative final reserve", []string{"run", "--final-reserve", "-0.1", exampleYAML}, "runner: --final-reserve -0.1: want a share in [0, 0.5]", "runner run FILE [flags]"},
		{"continue without a task", []string{"continue", "--out", "o"}, "runner: accepts 1 arg(s), received 0", "runner continue --out OUT ID"},
		{"continue with a negative budget", []string{"continue", "--out", "o", "t1", "--budget", "-1"}, "runner: --budget and --max-steps cannot be negative", "runner continue"},
		{"rollback --remote with --out", []string{"rollback", "--out", "o", "--all", "--remote", "u"}, "runner: --remote goes with --repo", "runner rollback"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Setenv("RUNNER_LOG_LEVEL", "")
			res := runMain(t, tt.args...)
			if res.code != cli.ExitUsage {
				t.Fatalf("exit code %d, want %d\n%s", res.code, cli.ExitUsage, res)
			}
			if res.stdout != "" {
				t.Errorf("stdout should be empty:\n%s", res.stdout)
			}
			got := nonEmptyLines(res.stderr)
			if len(got) < 3 || !strings.HasPrefix(got[0], tt.wantError) || got[1] != "Usage:" || !strings.Contains(strings.Join(got[2:], "\n"), tt.wantUsage) {
				t.Errorf("stderr:\n%s\nwant %q, then Usage: and %q", res.stderr, tt.wantError, tt.wantUsage)
			}
		})
	}
}

func TestHelp(t *testing.T) {
	res := runMain(t, "--help")
	if res.code != cli.ExitOK || res.stderr != "" {
		t.Fatalf("--help: %s", res)
	}
	for _, want := range []string{"Exit codes:", "DOCKER_HOST", "RUNNER_LOG_LEVEL", "NO_COLOR", "GITHUB_TOKEN",
		"validate", "image", "cleanup", "rollback", "continue", "version", "--json", "--log-level", "--no-color"} {
		if !strings.Contains(res.stdout, want) {
			t.Errorf("help lacks %q:\n%s", want, res.stdout)
		}
	}
}

func TestVersion(t *testing.T) {
	res := runMain(t, "version")
	if res.code != cli.ExitOK {
		t.Fatalf("version: %s", res)
	}
	if got := strings.TrimSpace(res.stdout); !strings.HasPrefix(got, "runner ") || !strings.Contains(got, runtime.Version()) || strings.Contains(got, "\n") {
		t.Errorf("version printed %q, want one line naming runner and %s", got, runtime.Version())
	}
	flag := runMain(t, "--version")
	if flag.stdout != res.stdout {
		t.Errorf("--version printed %q, version printed %q", flag.stdout, res.stdout)
	}
	res = runMain(t, "version", "--json")
	var got buildInfo
	if err := json.Unmarshal([]byte(res.stdout), &got); err != nil || res.code != cli.ExitOK {
		t.Fatalf("version --json: %v\n%s", err, res)
	}
	if got.Go != runtime.Version() || got.Version == "" {
		t.Errorf("version --json = %+v, want go %s and a version", got, runtime.Version())
	}
}

func TestBuildInfoString(t *testing.T) {
	tests := []struct {
		in   buildInfo
		want string
	}{
		{buildInfo{Version: "devel", Go: "go1.26.8"}, "runner devel (go1.26.8)"},
		{buildInfo{Version: "v1.2.3", Commit: "0123456789abcdef0123", Time: "2026-01-02T03:04:05Z", Go: "go1.26.8"},
			"runner v1.2.3 (0123456789ab, 2026-01-02T03:04:05Z, go1.26.8)"},
		{buildInfo{Version: "devel", Commit: "abc", Modified: true, Go: "go1.26.8"}, "runner devel (abc-modified, go1.26.8)"},
	}
	for _, tt := range tests {
		if got := tt.in.String(); got != tt.want {
			t.Errorf("%+v.String() = %q, want %q", tt.in, got, tt.want)
		}
	}
}

// The log level comes from --log-level, else RUNNER_LOG_LEVEL, else warn.
func TestLogLevel(t *testing.T) {
	tests := []struct {
		name, env, flag string
		want            slog.Level // the lowest level logged
	}{
		{"default", "", "", slog.LevelWarn},
		{"environment", "debug", "", slog.LevelDebug},
		{"flag over environment", "debug", "error", slog.LevelError},
		{"offset form", "", "info+2", slog.LevelInfo + 2},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var stderr strings.Builder
			d := newDeps(strings.NewReader(""), &strings.Builder{}, &stderr, func(k string) string {
				if k == "RUNNER_LOG_LEVEL" {
					return tt.env
				}
				return ""
			})
			d.globals.logLevel = tt.flag
			if err := d.setup(); err != nil {
				t.Fatal(err)
			}
			if d.log.Enabled(t.Context(), tt.want-1) || !d.log.Enabled(t.Context(), tt.want) {
				t.Errorf("logger does not start at level %s", tt.want)
			}
			d.log.Log(t.Context(), tt.want, "probe")
			if got := stderr.String(); !strings.Contains(got, "msg=probe") {
				t.Errorf("log on stderr = %q, want the probe", got)
			}
		})
	}
}
