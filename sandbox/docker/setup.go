package docker

import (
	"context"
	"fmt"
	"io"
	"strconv"
	"strings"
	"time"

	cerrdefs "github.com/containerd/errdefs"
	"github.com/moby/moby/api/pkg/stdcopy"
	"github.com/moby/moby/api/types/container"
	"github.com/moby/moby/client"

	"github.com/runner-dev/runner/internal/panics"
	"github.com/runner-dev/runner/sandbox"
	"github.com/runner-dev/runner/sandbox/cmdwrap"
)

var _ sandbox.Environments = (*Engine)(nil)

// envDir is where an environment image keeps what setup left in the home
// and, of what it added to the workspace, what Setup.Keep selected; a
// sandbox started from the image copies both back into place (see
// restoreEnvironment), since its home and workspace are fresh mounts.
const envDir = "/var/lib/runner-env"

// setupCaps are the capabilities of the setup's root: what package
// managers need to install files and drop privileges (apt's _apt user),
// and no more. NET_RAW, MKNOD, SYS_CHROOT and the rest of the engine's
// default set stay dropped, and no-new-privileges stays on.
var setupCaps = []string{"CHOWN", "DAC_OVERRIDE", "FOWNER", "FSETID", "SETUID", "SETGID", "KILL"}

// Prepare runs a setup, or reuses a cached one; see sandbox.Environments.
//
// The setup runs in a container of its own: root, a writable root
// filesystem, the setup's network; the same memory, CPU and process limits
// as the task (the disk is the engine's storage, with no size limit). Its
// result is committed as an image labelled with the key (LabelEnvKey); the
// secret values of the setup's environment travel in each command's exec
// environment only, never in the container's configuration, and the
// image's layer is scanned for them before it is kept.
func (e *Engine) Prepare(ctx context.Context, s sandbox.Setup) (sandbox.Environment, error) {
	start := time.Now()
	s, err := s.WithDefaults()
	if err != nil {
		return sandbox.Environment{}, err
	}
	base, err := e.cli.ImageInspect(ctx, s.Base.Image)
	if err != nil {
		if cerrdefs.IsNotFound(err) {
			return sandbox.Environment{}, &sandbox.ImageError{Image: s.Base.Image}
		}
		return sandbox.Environment{}, e.explain("inspect image", s.Base.Image, err)
	}
	if s.Key == "" {
		env, err := e.buildEnvironment(ctx, s, "", base.InspectResponse)
		env.Duration = time.Since(start)
		return env, err
	}
	key := sandbox.EnvironmentKey(base.ID, s)
	unlock, err := buildLocks.lock(ctx, key)
	if err != nil {
		return sandbox.Environment{}, fmt.Errorf("wait for the setup of the same environment: %w", err)
	}
	defer unlock()
	if img, ok := e.cachedEnvironment(ctx, key, base.InspectResponse); ok {
		return sandbox.Environment{Image: img, Key: key, Cached: true, Duration: time.Since(start)}, nil
	}
	env, err := e.buildEnvironment(ctx, s, key, base.InspectResponse)
	env.Duration = time.Since(start)
	if err == nil {
		e.trimCache(context.WithoutCancel(ctx), s.CacheLimit, key) // never the one just built
	}
	return env, err
}

// Release removes an environment that is not cached.
func (e *Engine) Release(ctx context.Context, env sandbox.Environment) error {
	if env.Key != "" || env.Image == "" {
		return nil
	}
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), time.Minute)
	defer cancel()
	_, err := e.cli.ImageRemove(ctx, env.Image, client.ImageRemoveOptions{PruneChildren: true})
	if err != nil && !cerrdefs.IsNotFound(err) {
		return e.explain("remove environment image", "", err)
	}
	return nil
}

// buildEnvironment runs the setup and commits its result, tagged and
// labelled with key when key is not empty.
func (e *Engine) buildEnvironment(ctx context.Context, s sandbox.Setup, key string, base imageInfo) (sandbox.Environment, error) {
	cfg := s.Base
	cfg.Disk = sandbox.NoDiskLimit // the writable layer is what is committed
	deadline := time.Now().Add(cfg.Lifetime)
	name := "runner-setup-" + safeName(cfg.TaskID) + "-" + sandbox.RandomID()
	created, err := e.cli.ContainerCreate(ctx, client.ContainerCreateOptions{
		Name:       name,
		Config:     setupContainerConfig(cfg, e.owner, deadline),
		HostConfig: setupHostConfig(cfg, s.Network),
	})
	d := &Sandbox{e: e, id: created.ID, name: name, cfg: cfg, deadline: deadline}
	defer d.Close(ctx)
	if err != nil {
		return sandbox.Environment{}, e.explain("create setup sandbox", cfg.Image, err)
	}
	if err := d.copyIn(ctx, cfg.Workspace); err != nil {
		return sandbox.Environment{}, err
	}
	if _, err := e.cli.ContainerStart(ctx, d.id, client.ContainerStartOptions{}); err != nil {
		return sandbox.Environment{}, e.explain("start setup sandbox", cfg.Image, err)
	}
	if len(cfg.CACerts) > 0 { // the setup trusts them too (they are public; kept or not, no harm)
		if err := d.installCACerts(ctx, cfg.CACerts); err != nil {
			return sandbox.Environment{}, err
		}
	}
	out := cmdwrap.NewHeadTail(sandbox.DefaultMaxOutput)
	rctx, cancel := context.WithTimeout(ctx, s.Timeout)
	defer cancel()
	env := append(append(cfg.CommandEnv(), s.Env...), s.SecretEnv...)
	for _, cmd := range s.Commands {
		code, err := d.rootExec(rctx, cmd, env, out)
		switch {
		case err != nil && rctx.Err() != nil && ctx.Err() == nil:
			return sandbox.Environment{}, &sandbox.SetupError{Command: cmd, TimedOut: true, Output: out.String()}
		case err != nil:
			return sandbox.Environment{}, fmt.Errorf("setup: %w", err)
		case code != 0:
			return sandbox.Environment{}, &sandbox.SetupError{Command: cmd, ExitCode: code, Output: out.String()}
		}
	}
	if err := d.keepWorkspace(ctx, s.Keep); err != nil {
		return sandbox.Environment{}, err
	}
	// Runs in ctx, not rctx: the setup's own time is over.
	var tidy strings.Builder
	if code, err := d.rootExec(ctx, tidyScript, cfg.CommandEnv(), &tidy); err != nil || code != 0 {
		return sandbox.Environment{}, fmt.Errorf("setup: put the environment's files in place: exit %d: %v: %s", code, err, tidy.String())
	}
	if _, err := e.cli.ContainerKill(ctx, d.id, client.ContainerKillOptions{Signal: "SIGKILL"}); err != nil {
		return sandbox.Environment{}, e.explain("stop setup sandbox", "", err)
	}
	if err := d.waitExited(ctx); err != nil {
		return sandbox.Environment{}, err
	}
	secrets := secretValues(s.SecretEnv)
	if err := d.findSecrets(ctx, secrets); err != nil {
		return sandbox.Environment{}, err
	}
	img, err := d.commitEnvironment(ctx, key, base)
	if err != nil {
		return sandbox.Environment{}, err
	}
	if err := e.checkImageConfig(ctx, img, secrets); err != nil {
		_, _ = e.cli.ImageRemove(context.WithoutCancel(ctx), img, client.ImageRemoveOptions{Force: true, PruneChildren: true})
		return sandbox.Environment{}, err
	}
	return sandbox.Environment{Image: img, Key: key, Output: out.String()}, nil
}

// tidyScript moves what setup left in the home under envDir, makes
// everything there the sandbox user's, and empties the workspace (what
// setup added that is kept is already under envDir/workspace). It runs as
// root.
var tidyScript = fmt.Sprintf(`set -e
mkdir -p %[1]s
rm -rf %[1]s/home
if [ -d %[2]s ]; then mv %[2]s %[1]s/home; fi
mkdir -p %[2]s
chown %[3]d:%[4]d %[2]s
chmod 0700 %[2]s
chown -R %[3]d:%[4]d %[1]s
rm -rf %[5]s/* %[5]s/.[!.]* %[5]s/..?*
`, envDir, sandbox.HomeDir, sandbox.UID, sandbox.GID, sandbox.Workdir)

func setupContainerConfig(cfg sandbox.Config, owner sandbox.Owner, deadline time.Time) *container.Config {
	c := containerConfig(cfg, owner, deadline)
	c.User = "0:0"
	// The container's own environment would be committed into the cached
	// image, and the key does not hold it (the task's env, its attempt,
	// its certificates' variables): each setup command gets it on its
	// exec instead.
	c.Env = nil
	return c
}

func setupHostConfig(cfg sandbox.Config, network string) *container.HostConfig {
	hc := hostConfig(cfg)
	hc.NetworkMode = container.NetworkMode(network)
	hc.CapAdd = setupCaps
	scratch := fmt.Sprintf("rw,nosuid,nodev,size=%d,mode=1777", int64(sandbox.DefaultDisk))
	hc.Tmpfs = map[string]string{"/tmp": scratch, "/var/tmp": scratch}
	return hc
}

// rootExec runs cmd as root with env, writing its output to out, and
// returns its exit code. It returns when the command has exited and its
// output is drained (or drainPeriod after, when something it left running
// holds the output open), or when ctx ends; the container is removed
// afterwards anyway, with whatever still runs in it.
func (d *Sandbox) rootExec(ctx context.Context, cmd string, env []string, out io.Writer) (int, error) {
	created, err := d.e.cli.ExecCreate(ctx, d.id, client.ExecCreateOptions{
		User: "0:0", AttachStdout: true, AttachStderr: true, Env: env,
		WorkingDir: sandbox.Workdir, Cmd: []string{"sh", "-c", cmd},
	})
	if err != nil {
		return 0, d.execError(ctx, err)
	}
	att, err := d.e.cli.ExecAttach(ctx, created.ID, client.ExecAttachOptions{})
	if err != nil {
		return 0, d.execError(ctx, err)
	}
	defer att.Close()
	done := panics.Go(ctx, func() error {
		_, err := stdcopy.StdCopy(out, out, att.Reader)
		return err
	})
	poll := time.NewTicker(250 * time.Millisecond)
	defer poll.Stop()
	for running := true; running; {
		select {
		case <-done:
			running = false
		case <-ctx.Done():
			att.Close()
			<-done
			return 0, ctx.Err()
		case <-poll.C:
			ins, err := d.e.cli.ExecInspect(ctx, created.ID, client.ExecInspectOptions{})
			if err != nil {
				return 0, d.execError(ctx, err)
			}
			if !ins.Running {
				select {
				case <-done:
				case <-time.After(drainPeriod):
					att.Close()
					<-done
				}
				running = false
			}
		}
	}
	code, _, err := d.exitCode(ctx, created.ID)
	if err != nil {
		return 0, d.execError(ctx, err)
	}
	return code, nil
}

// waitExited waits until the container has stopped.
func (d *Sandbox) waitExited(ctx context.Context) error {
	ctx, cancel := context.WithTimeout(ctx, time.Minute)
	defer cancel()
	wait := d.e.cli.ContainerWait(ctx, d.id, client.ContainerWaitOptions{Condition: container.WaitConditionNotRunning})
	select {
	case <-wait.Result:
		return nil
	case err := <-wait.Error:
		return d.e.explain("stop setup sandbox", "", err)
	}
}

// commitEnvironment commits the stopped setup container as an image and
// returns its id; with a key, the image is tagged envTag(key).
func (d *Sandbox) commitEnvironment(ctx context.Context, key string, base imageInfo) (string, error) {
	opt := client.ContainerCommitOptions{
		Comment: "runner environment",
		Changes: []string{
			"LABEL " + LabelEnvKey + "=" + strconv.Quote(key),
			"LABEL " + LabelEnvBase + "=" + strconv.Quote(base.ID),
			"LABEL " + LabelEnvCreated + "=" + strconv.Quote(time.Now().UTC().Format(time.RFC3339)),
		},
		NoPause: true,
	}
	if key != "" {
		opt.Reference = envTag(key)
	}
	res, err := d.e.cli.ContainerCommit(ctx, d.id, opt)
	if err != nil {
		return "", d.e.explain("commit environment", "", err)
	}
	return res.ID, nil
}

// restoreEnvironment puts back, in a sandbox started from an environment
// image, what setup left in the home and the workspace: the mounts of the
// sandbox hide the image's own. A file of the task's workspace is never
// replaced.
func (d *Sandbox) restoreEnvironment(ctx context.Context) error {
	img, err := d.e.cli.ImageInspect(ctx, d.cfg.Image)
	if err != nil {
		return d.e.explain("inspect image", d.cfg.Image, err)
	}
	if img.Config == nil || img.Config.Labels[LabelEnvBase] == "" {
		return nil
	}
	cmd := fmt.Sprintf(`set -e
if [ -d %[1]s/home ]; then cp -a %[1]s/home/. %[2]s/; fi
if [ -d %[1]s/workspace ]; then cp -a -n %[1]s/workspace/. %[3]s/; fi`, envDir, sandbox.HomeDir, sandbox.Workdir)
	res, err := d.Exec(ctx, cmd, sandbox.ExecOptions{Timeout: 30 * time.Minute})
	if err != nil {
		return fmt.Errorf("restore the environment: %w", err)
	}
	if res.ExitCode != 0 || res.TimedOut {
		return fmt.Errorf("restore the environment: exit code %d: %s", res.ExitCode, strings.TrimSpace(res.Output))
	}
	return nil
}

// secretValues are the values of KEY=VALUE entries, empty ones left out.
func secretValues(env []string) []string {
	var out []string
	for _, kv := range env {
		if _, v, _ := strings.Cut(kv, "="); v != "" {
			out = append(out, v)
		}
	}
	return out
}

// checkImageConfig refuses an image whose configuration (environment,
// labels, command) holds a secret value.
func (e *Engine) checkImageConfig(ctx context.Context, img string, secrets []string) error {
	res, err := e.cli.ImageInspect(ctx, img)
	if err != nil {
		return e.explain("inspect environment", "", err)
	}
	if res.Config == nil {
		return nil
	}
	c := res.Config
	fields := append(append(append([]string{}, c.Env...), c.Cmd...), c.Entrypoint...)
	for k, v := range c.Labels {
		fields = append(fields, k, v)
	}
	fields = append(fields, c.WorkingDir, c.User)
	for _, f := range fields {
		for _, s := range secrets {
			if strings.Contains(f, s) {
				return fmt.Errorf("%w: the value of a secret of setup_env is in the environment image's configuration; nothing was kept", sandbox.ErrSecretLeft)
			}
		}
	}
	return nil
}
