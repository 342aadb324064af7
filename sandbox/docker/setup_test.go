package docker_test

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/runner-dev/runner/internal/dockertest"
	"github.com/runner-dev/runner/sandbox"
	"github.com/runner-dev/runner/sandbox/docker"
)

// prepare runs e.Prepare and removes what it made at the end of the test.
func prepare(t *testing.T, e *docker.Engine, s sandbox.Setup) (sandbox.Environment, error) {
	t.Helper()
	if s.Base.RunID == "" {
		s.Base.RunID = dockertest.RunID
	}
	if s.Base.TaskID == "" {
		s.Base.TaskID = t.Name()
	}
	s.CacheLimit = -1 // the engine is shared: never evict others' entries
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()
	env, err := e.Prepare(ctx, s)
	if err == nil {
		t.Cleanup(func() {
			if env.Key != "" {
				_ = e.RemoveEnvironment(context.Background(), env.Key)
			}
			_ = e.Release(context.Background(), env)
		})
	}
	return env, err
}

// workspace writes files into a new directory.
func workspace(t *testing.T, files map[string]string) string {
	t.Helper()
	dir := t.TempDir()
	for name, body := range files {
		p := filepath.Join(dir, name)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return dir
}

// The setup downloads a real package from Debian's mirror with the
// network; the agent's sandbox, started from the result with no network,
// has the package, the home and the kept workspace additions, finds no
// route out, and holds the setup's secret nowhere.
func TestSetupOnlineThenAgentOffline(t *testing.T) {
	e := dockertest.Engine(t)
	img := dockertest.Debian(t)
	ws := workspace(t, map[string]string{"README.md": "base\n"})
	canary := "setup-canary-" + sandbox.RandomID()
	env, err := prepare(t, e, sandbox.Setup{
		Base: sandbox.Config{Image: img, Workspace: ws},
		Commands: []string{
			"apt-get update -q && apt-get install -y -q --no-install-recommends jq",
			"getent ahostsv4 deb.debian.org | awk '{print $1; exit}' > /etc/mirror-ip && test -s /etc/mirror-ip",
			`mkdir -p deps "$HOME/.cache" && echo dep > deps/lib.txt && echo changed > README.md && echo stray > stray.txt && echo warm > "$HOME/.cache/warm"`,
			`echo "the token is $SETUP_TOKEN"`,
		},
		SecretEnv: []string{"SETUP_TOKEN=" + canary},
		Keep:      func(p string, dir bool) bool { return p == "deps" },
	})
	if err != nil {
		t.Fatalf("Prepare: %v", err)
	}
	if env.Cached || !strings.Contains(env.Output, "Setting up jq") {
		t.Fatalf("Prepare: cached %v, output does not show jq installed:\n%s", env.Cached, env.Output)
	}
	sb := startOn(t, e, sandbox.Config{Image: env.Image, Workspace: ws})
	if got := output(t, sb, "jq --version"); !strings.HasPrefix(got, "jq-") {
		t.Errorf("jq --version = %q, want the installed jq", got)
	}
	if got := output(t, sb, `cat deps/lib.txt "$HOME/.cache/warm" README.md; stat -c %u:%g deps/lib.txt; ls`); got != "dep\nwarm\nbase\n1000:1000\nREADME.md\ndeps" {
		t.Errorf("workspace and home after setup:\n%s\nwant the kept deps/, the warm home, the task's own README.md and no stray.txt", got)
	}
	// No route out: only loopback, and the mirror setup reached is unreachable.
	res := run(t, sb, `cat /proc/net/route | wc -l; timeout 20 bash -c "exec 3<>/dev/tcp/$(cat /etc/mirror-ip)/80"; echo "exit $?"`, sandbox.ExecOptions{})
	if !strings.HasPrefix(res.Output, "1\n") || !strings.Contains(res.Output, "unreachable") || strings.Contains(res.Output, "exit 0") {
		t.Errorf("the agent's sandbox reached out or has a route:\n%s", res.Output)
	}
	// The secret: not in the environment, /proc or any file of the image.
	half := len(canary) / 2
	res = run(t, sb, fmt.Sprintf(`A=%s; B=%s; env | grep -c "$A$B"; cat /proc/1/environ | tr '\0' '\n' | grep -c "$A$B"; grep -rlsF --exclude-dir=proc --exclude-dir=sys --exclude-dir=dev "$A$B" / ; echo end`,
		canary[:half], canary[half:]), sandbox.ExecOptions{Timeout: 5 * time.Minute})
	if strings.TrimSpace(res.Stdout) != "0\n0\nend" {
		t.Errorf("the setup's secret is in the agent's sandbox:\n%s", res.Output)
	}
}

// A setup that leaves a secret in a file is refused and nothing is kept.
func TestSetupSecretLeftIsRefused(t *testing.T) {
	e := dockertest.Engine(t)
	canary := "setup-canary-" + sandbox.RandomID()
	for _, cmd := range []string{
		// in a file's content (deep in an added directory), in a name
		`mkdir -p /etc/app/conf.d && { head -c 100000 /dev/zero; echo "token=$SETUP_TOKEN"; } > /etc/app/conf.d/config`,
		`mkdir -p "/opt/$SETUP_TOKEN"`,
	} {
		s := sandbox.Setup{
			Base:      sandbox.Config{Image: dockertest.Busybox(t), Workspace: t.TempDir()},
			Commands:  []string{cmd},
			SecretEnv: []string{"SETUP_TOKEN=" + canary},
			Key:       "test-" + sandbox.RandomID(),
		}
		_, err := prepare(t, e, s)
		if !errors.Is(err, sandbox.ErrSecretLeft) {
			t.Errorf("setup %q: err = %v, want ErrSecretLeft", cmd, err)
			continue
		}
		if strings.Contains(err.Error(), canary) {
			t.Errorf("the error shows the secret: %v", err)
		}
		tag := "runner-env:" + sandbox.EnvironmentKey(imageID(t, dockertest.Busybox(t)), s)
		if out, err := dockerCLI(t, "image", "inspect", tag); err == nil {
			t.Errorf("setup %q: the environment was kept as %s: %s", cmd, tag, out)
		}
	}
}

// A failing setup is a SetupError with the command's output.
func TestSetupFailure(t *testing.T) {
	e := dockertest.Engine(t)
	_, err := prepare(t, e, sandbox.Setup{
		Base:     sandbox.Config{Image: dockertest.Busybox(t), Workspace: t.TempDir()},
		Commands: []string{"echo first", "echo broken >&2; exit 3", "echo never"},
	})
	var se *sandbox.SetupError
	if !errors.As(err, &se) || se.ExitCode != 3 || se.Command != "echo broken >&2; exit 3" || se.Output != "first\nbroken\n" {
		t.Fatalf("err = %#v, want a SetupError of the second command with exit 3 and the output so far", err)
	}
	_, err = prepare(t, e, sandbox.Setup{
		Base:     sandbox.Config{Image: dockertest.Busybox(t), Workspace: t.TempDir()},
		Commands: []string{"sleep 600"},
		Timeout:  2 * time.Second,
	})
	if !errors.As(err, &se) || !se.TimedOut {
		t.Fatalf("err = %v, want a SetupError that timed out", err)
	}
}

// counter is a host HTTP server each setup run bumps; its count shows how
// many times setup really ran.
type counter struct {
	n    atomic.Int64
	addr string // host:port as seen from the engine's bridge
}

func startCounter(t *testing.T) *counter {
	t.Helper()
	c := &counter{}
	ln, err := net.Listen("tcp", "0.0.0.0:0")
	if err != nil {
		t.Fatal(err)
	}
	srv := &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		c.n.Add(1)
		fmt.Fprintln(w, "bumped")
	})}
	go srv.Serve(ln)
	t.Cleanup(func() { srv.Close() })
	c.addr = fmt.Sprint(ln.Addr().(*net.TCPAddr).Port)
	return c
}

// bump is the setup command that bumps c through the bridge's gateway.
func (c *counter) bump() string {
	return `gw=$(ip route | awk '/^default/ {print $3}'); printf 'GET /bump HTTP/1.0\r\n\r\n' | nc -w 10 "$gw" ` + c.addr + ` | grep -q bumped`
}

// The second setup with the same key runs nothing; a changed key (a
// changed lockfile) runs setup again; N concurrent tasks with a new key run
// it once; an entry that is not what its label says is rebuilt.
func TestSetupCache(t *testing.T) {
	e := dockertest.Engine(t)
	c := startCounter(t)
	ws := t.TempDir()
	setup := func(key string) sandbox.Setup {
		return sandbox.Setup{
			Base:     sandbox.Config{Image: dockertest.Busybox(t), Workspace: ws},
			Commands: []string{c.bump(), "echo ready > /etc/ready"},
			Key:      key,
		}
	}
	key := "lock-" + sandbox.RandomID()
	first, err := prepare(t, e, setup(key))
	if err != nil || first.Cached || c.n.Load() != 1 {
		t.Fatalf("first Prepare: cached %v, err %v, setup ran %d times; want one run", first.Cached, err, c.n.Load())
	}
	second, err := prepare(t, e, setup(key))
	if err != nil || !second.Cached || second.Image != first.Image || c.n.Load() != 1 {
		t.Fatalf("second Prepare: cached %v (image %s, first %s), err %v, setup ran %d times; want the cached image, no run", second.Cached, second.Image, first.Image, err, c.n.Load())
	}
	sb := startOn(t, e, sandbox.Config{Image: second.Image, Workspace: ws})
	if got := output(t, sb, "cat /etc/ready"); got != "ready" {
		t.Errorf("cached environment: /etc/ready = %q", got)
	}
	if _, err := prepare(t, e, setup(key+"-changed")); err != nil || c.n.Load() != 2 {
		t.Fatalf("changed key: err %v, setup ran %d times; want 2", err, c.n.Load())
	}

	// Concurrency: one build for 4 tasks.
	key = "lock-" + sandbox.RandomID()
	var wg sync.WaitGroup
	var mu sync.Mutex
	images := map[string]int{}
	for range 4 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			env, err := prepare(t, e, setup(key))
			if err != nil {
				t.Errorf("concurrent Prepare: %v", err)
				return
			}
			mu.Lock()
			images[env.Image]++
			mu.Unlock()
		}()
	}
	wg.Wait()
	if c.n.Load() != 3 || len(images) != 1 {
		t.Fatalf("4 concurrent Prepare: setup ran %d times in all (want 3), images %v (want one)", c.n.Load(), images)
	}

	// A tag that points at something else is not trusted.
	full := sandbox.EnvironmentKey(imageID(t, dockertest.Busybox(t)), setup(key))
	if out, err := dockerCLI(t, "tag", dockertest.Busybox(t), "runner-env:"+full); err != nil {
		t.Fatalf("docker tag: %v: %s", err, out)
	}
	if env, err := prepare(t, e, setup(key)); err != nil || env.Cached || c.n.Load() != 4 {
		t.Fatalf("after the entry was replaced: cached %v, err %v, setup ran %d times; want a rebuild", env.Cached, err, c.n.Load())
	}
	list, err := e.Environments(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	found := false
	for _, ent := range list {
		found = found || ent.Key == full
	}
	if !found {
		t.Errorf("Environments does not list %s", full)
	}
}

func imageID(t *testing.T, ref string) string {
	t.Helper()
	out, err := dockerCLI(t, "image", "inspect", "-f", "{{.Id}}", ref)
	if err != nil {
		t.Fatalf("docker image inspect: %v: %s", err, out)
	}
	return out
}
