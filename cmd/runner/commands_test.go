package main

import (
	"context"
	"io"
	"slices"
	"strings"
	"testing"

	"github.com/spf13/cobra"

	"github.com/runner-dev/runner/sandbox"
)

// testDeps returns deps whose environment is vars.
func testDeps(vars map[string]string) *deps {
	return newDeps(strings.NewReader(""), io.Discard, io.Discard, func(k string) string { return vars[k] })
}

// executeAlone runs cmd alone (without the root command) on args.
func executeAlone(t *testing.T, cmd *cobra.Command, args ...string) {
	t.Helper()
	cmd.SetArgs(args)
	cmd.SetOut(io.Discard)
	cmd.SetErr(io.Discard)
	if err := cmd.Execute(); err != nil {
		t.Fatalf("%s %q: %v", cmd.Name(), args, err)
	}
}

// The flags of each command reach its options; runF stands for the
// command's logic.
func TestCommandOptions(t *testing.T) {
	t.Run("image build defaults", func(t *testing.T) {
		var got *imageBuildOptions
		executeAlone(t, newImageBuildCmd(testDeps(nil), func(_ context.Context, o *imageBuildOptions) error { got = o; return nil }))
		if got.base != "" || got.tag != sandbox.DefaultImage || got.quiet {
			t.Errorf("options %+v, want no base, tag %s, not quiet", got, sandbox.DefaultImage)
		}
	})
	t.Run("image build flags", func(t *testing.T) {
		var got *imageBuildOptions
		executeAlone(t, newImageBuildCmd(testDeps(nil), func(_ context.Context, o *imageBuildOptions) error { got = o; return nil }),
			"--base", "debian:12", "--tag", "sb:1", "-q")
		if got.base != "debian:12" || got.tag != "sb:1" || !got.quiet {
			t.Errorf("options %+v, want base debian:12, tag sb:1, quiet", got)
		}
	})
	t.Run("image check default", func(t *testing.T) {
		var got *imageCheckOptions
		executeAlone(t, newImageCheckCmd(testDeps(nil), func(_ context.Context, o *imageCheckOptions) error { got = o; return nil }))
		if got.image != sandbox.DefaultImage {
			t.Errorf("image %q, want %q", got.image, sandbox.DefaultImage)
		}
	})
	t.Run("cleanup dry run", func(t *testing.T) {
		var got *cleanupOptions
		executeAlone(t, newCleanupCmd(testDeps(nil), func(_ context.Context, o *cleanupOptions) error { got = o; return nil }), "-n")
		if !got.dryRun {
			t.Error("dryRun = false after -n")
		}
	})
	t.Run("validate files", func(t *testing.T) {
		var got *validateOptions
		executeAlone(t, newValidateCmd(testDeps(nil), func(_ context.Context, o *validateOptions) error { got = o; return nil }), "a.yaml", "b.jsonl")
		if !slices.Equal(got.files, []string{"a.yaml", "b.jsonl"}) {
			t.Errorf("files %q, want a.yaml b.jsonl", got.files)
		}
	})
	t.Run("continue flags", func(t *testing.T) {
		var got *continueOptions
		executeAlone(t, newContinueCmd(testDeps(nil), func(_ context.Context, o *continueOptions) error { got = o; return nil }),
			"--out", "o", "t1", "--budget", "0.5", "--max-steps", "7", "--prompt", "look in tests/")
		if got.out != "o" || got.id != "t1" || got.budgetUSD != 0.5 || got.maxSteps != 7 || got.prompt != "look in tests/" {
			t.Errorf("options %+v, want out o, id t1, budget 0.5, 7 steps, the prompt", got)
		}
	})
	t.Run("rollback of tasks", func(t *testing.T) {
		var got *rollbackOptions
		executeAlone(t, newRollbackCmd(testDeps(nil), func(_ context.Context, o *rollbackOptions) error { got = o; return nil }),
			"--out", "o", "t1", "t2")
		if got.out != "o" || !slices.Equal(got.ids, []string{"t1", "t2"}) || got.all || got.dryRun {
			t.Errorf("options %+v, want out o, ids t1 t2", got)
		}
	})
}

func TestRollbackToken(t *testing.T) {
	tests := []struct {
		name string
		env  map[string]string
		want string
	}{
		{"none", nil, ""},
		{"GITHUB_TOKEN", map[string]string{"GITHUB_TOKEN": "gh"}, "gh"},
		{"RUNNER_GIT_TOKEN first", map[string]string{"GITHUB_TOKEN": "gh", "RUNNER_GIT_TOKEN": "rg"}, "rg"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var got *rollbackOptions
			executeAlone(t, newRollbackCmd(testDeps(tt.env), func(_ context.Context, o *rollbackOptions) error { got = o; return nil }),
				"--repo", "r", "--branch", "b")
			if got.auth.Token != tt.want {
				t.Errorf("token %q, want %q", got.auth.Token, tt.want)
			}
		})
	}
}
