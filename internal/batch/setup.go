package batch

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"

	"github.com/runner-dev/runner/agent"
	"github.com/runner-dev/runner/gitops"
	"github.com/runner-dev/runner/internal/redact"
	"github.com/runner-dev/runner/sandbox"
	"github.com/runner-dev/runner/tasks"
)

// setupTail is how much of a failed setup's output the result's error
// keeps; the trajectory has the whole (capped) output.
const setupTail = 2000

// prepareEnvironment runs the task's setup (the lifecycle commands of the
// repository's devcontainer.json first, then the task's setup), or reuses
// its cached result, and returns the image the task's sandbox starts from.
// Without setup it is the task's resolved image (w.env). When it returns false the task has ended (as
// setup_failed, or sandbox_error when the backend failed) before any model
// call; release removes an uncached environment once the sandbox is gone.
func (w *work) prepareEnvironment(ctx context.Context, dir string) (image string, release func(), ok bool) {
	t := w.task
	commands := append(slices.Clone(w.env.setup), t.Setup.Commands...)
	if len(commands) == 0 {
		return w.env.image, func() {}, true
	}
	network, timeout := t.Setup.Network, t.Setup.Timeout
	if network == "" { // a devcontainer's commands alone
		network = tasks.NetworkBridge
	}
	if timeout == 0 {
		timeout = tasks.DefaultSetupTimeout
	}
	w.phase(PhaseSetup)
	if w.deps.Environments == nil {
		w.fail(tasks.StatusSandboxError, errors.New("setup: the sandbox backend cannot run a setup phase"))
		return "", nil, false
	}
	secretEnv, secrets, err := w.setupSecrets()
	if err != nil {
		w.fail(tasks.StatusSetupFailed, err)
		return "", nil, false
	}
	var key string
	if !t.Setup.NoCache {
		key, err = gitops.ContentKey(dir, w.clone.Base, t.Setup.CacheKey)
		if err != nil {
			w.fail(tasks.StatusSetupFailed, fmt.Errorf("%s: task %q: cache_key: %w", sourceOf(t), t.ID, err))
			return "", nil, false
		}
	}
	keep, err := gitops.IgnoredAdditions(dir, t.Exclude)
	if err != nil {
		w.fail(tasks.StatusSetupFailed, fmt.Errorf("setup: %w", err))
		return "", nil, false
	}
	env, err := w.deps.Environments.Prepare(ctx, sandbox.Setup{
		Base: sandbox.Config{
			Image: w.env.image, Runtime: t.Runtime, Memory: t.Limits.Memory, CPUs: t.Limits.CPUs, Pids: t.Limits.Pids,
			Lifetime: sandboxLifetime(t, w.opt), Env: envList(withImageEnv(t, w.env.env)), Workspace: dir, RunID: w.opt.RunID, TaskID: t.ID,
			CACerts: t.CACerts,
		},
		Commands: commands, Network: string(network), Timeout: timeout,
		Env: envList(t.Setup.Env), SecretEnv: secretEnv, Keep: keep, Key: key, CacheLimit: w.opt.EnvironmentCacheLimit,
	})
	hide := redact.New(append(slices.Clone(w.deps.Secrets), secrets...)...)
	var se *sandbox.SetupError
	switch {
	case errors.As(err, &se):
		status := fmt.Sprint("exit ", se.ExitCode)
		if se.TimedOut {
			status = "timed out"
		}
		w.recordSetup(hide, commands, se.Output, status, true)
		w.fail(tasks.StatusSetupFailed, errors.New(hide.String(fmt.Sprintf("%v; its output ends with:\n%s", se, tail(se.Output, setupTail)))))
		return "", nil, false
	case errors.Is(err, sandbox.ErrSecretLeft):
		w.recordSetup(hide, commands, err.Error(), "refused", true)
		w.fail(tasks.StatusSetupFailed, errors.New(hide.String(err.Error())))
		return "", nil, false
	case err != nil:
		w.fail(w.statusOf(ctx, tasks.StatusSandboxError), errors.New(hide.String("setup: "+err.Error())))
		return "", nil, false
	}
	status := "exit 0"
	if env.Cached {
		status = "cached"
	}
	w.recordSetup(hide, commands, env.Output, status, false)
	w.phase(PhaseSandbox) // the task's own sandbox starts next
	w.res.Setup = &tasks.SetupResult{Cached: env.Cached, Duration: tasks.Duration(env.Duration), Key: env.Key}
	return env.Image, func() {
		if err := w.deps.Environments.Release(context.WithoutCancel(ctx), env); err != nil {
			w.res.Warnings = append(w.res.Warnings, "the task's environment image was not removed: "+err.Error())
		}
	}, true
}

// setupSecrets reads the host variables the task's setup_env names: the
// KEY=VALUE entries of the setup and the values alone, to hide.
func (w *work) setupSecrets() (env, values []string, err error) {
	names := slices.Sorted(maps.Keys(w.task.Setup.HostEnv))
	for _, name := range names {
		host := w.task.Setup.HostEnv[name]
		v := w.deps.getenv(host)
		if v == "" {
			return nil, nil, fmt.Errorf("%s: task %q: setup_env.%s: the host variable %s is not set", sourceOf(w.task), w.task.ID, name, host)
		}
		env, values = append(env, name+"="+v), append(values, v)
	}
	return env, values, nil
}

// recordSetup writes the setup's event to the trajectory, redacted.
func (w *work) recordSetup(hide *redact.Redactor, commands []string, output, status string, failed bool) {
	w.traj.Record(agent.Event{Type: agent.EventSetup, Text: hide.String(strings.Join(commands, "\n")),
		Status: agent.Status(status), Summary: hide.String(output), IsError: failed})
}

// sourceOf is "file:line" of the task, or its id alone.
func sourceOf(t tasks.Task) string {
	if t.Source.File == "" {
		return "task " + t.ID
	}
	return fmt.Sprintf("%s:%d", t.Source.File, t.Source.Line)
}

// tail is the last n bytes of s, from a line start when there is one.
func tail(s string, n int) string {
	s = strings.TrimRight(s, "\n")
	if len(s) <= n {
		return s
	}
	s = s[len(s)-n:]
	if i := strings.IndexByte(s, '\n'); i >= 0 && i < len(s)-1 {
		s = s[i+1:]
	}
	return "…" + s
}
