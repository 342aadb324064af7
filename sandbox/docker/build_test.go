package docker_test

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/moby/moby/client"

	"github.com/runner-dev/runner/internal/dockertest"
	"github.com/runner-dev/runner/sandbox"
	"github.com/runner-dev/runner/sandbox/docker"
)

// writeTree writes files (name -> content) under dir.
func writeTree(t *testing.T, dir string, files map[string]string) {
	t.Helper()
	for name, body := range files {
		p := filepath.Join(dir, name)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

// buildContext builds opt, removing the image it made at the end of the
// test.
func buildContext(t *testing.T, opt sandbox.ContextBuildOptions) (sandbox.BuiltImage, error) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	var out strings.Builder
	opt.Progress = &out
	img, err := dockertest.Engine(t).BuildContext(ctx, opt)
	if err == nil && !img.Cached {
		c := dockertest.Client(t)
		t.Cleanup(func() {
			c.ImageRemove(context.Background(), img.Ref, client.ImageRemoveOptions{Force: true, PruneChildren: true})
		})
	}
	t.Logf("build output:\n%s", out.String())
	return img, err
}

// The repository's own Dockerfile is built with the repository as its
// context: .dockerignore applies, .git and what a symlink points to
// outside the context never reach the image, USER and VOLUME are
// reported (not obeyed), and the same content is not built twice.
func TestBuildContextSendsTheRepositoryOnly(t *testing.T) {
	outside := t.TempDir()
	secret := "host-secret-" + sandbox.RandomID()
	writeTree(t, outside, map[string]string{"secret": secret})
	dir := t.TempDir()
	writeTree(t, dir, map[string]string{
		"build/Dockerfile": "FROM " + dockertest.Busybox(t) + "\nCOPY . /ctx/\nRUN mkdir -m 1777 /data\nUSER root\nVOLUME /data\n",
		".dockerignore":    "ignored.txt\n**/*.log\n",
		"app.txt":          "app " + sandbox.RandomID(),
		"ignored.txt":      "left out",
		"deep/x.log":       "left out",
		".git/config":      "[remote \"origin\"]\n\turl = https://user:" + secret + "@example.com/r.git\n",
	})
	if err := os.Symlink(filepath.Join(outside, "secret"), filepath.Join(dir, "link")); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink("../../"+filepath.Base(outside)+"/secret", filepath.Join(dir, "rel")); err != nil {
		t.Fatal(err)
	}
	opt := sandbox.ContextBuildOptions{Dir: dir, Dockerfile: "build/Dockerfile"}
	img, err := buildContext(t, opt)
	if err != nil {
		t.Fatal(err)
	}
	if img.Cached || img.User != "root" || !slices.Equal(img.Volumes, []string{"/data"}) {
		t.Errorf("first build = %+v, want built, User root, Volumes [/data]", img)
	}
	// The image's VOLUME is held to the disk limit like the rest.
	sb := start(t, sandbox.Config{Image: img.Ref, Disk: 8 << 20})
	got := output(t, sb, `cd /ctx && find . | sort; readlink link; cat link rel 2>&1 >/dev/null | wc -l; grep -rl `+secret+` /ctx /etc /bin | wc -l; id -u; `+
		`dd if=/dev/zero of=/data/fill bs=1M count=16 2>&1 | grep -c 'No space left'`)
	want := ".\n./.dockerignore\n./app.txt\n./build\n./build/Dockerfile\n./deep\n./link\n./rel\n" +
		filepath.Join(outside, "secret") + "\n2\n0\n1000\n1"
	if got != want {
		t.Errorf("in the built image:\n%s\nwant:\n%s", got, want)
	}

	again, err := buildContext(t, opt)
	if err != nil || !again.Cached || again.Ref != img.Ref || again.User != "root" {
		t.Errorf("same content again = %+v, %v; want the cached %s", again, err, img.Ref)
	}
	writeTree(t, dir, map[string]string{"ignored.txt": "still left out"})
	if again, err := buildContext(t, opt); err != nil || !again.Cached {
		t.Errorf("a change to an ignored file = %+v, %v; want the cached image", again, err)
	}
	writeTree(t, dir, map[string]string{"app.txt": "changed " + sandbox.RandomID()})
	changed, err := buildContext(t, opt)
	if err != nil || changed.Cached || changed.Ref == img.Ref {
		t.Errorf("changed content = %+v, %v; want a new build", changed, err)
	}
}

func TestBuildContextRefusesBadInput(t *testing.T) {
	dir := t.TempDir()
	writeTree(t, dir, map[string]string{"Dockerfile": "FROM scratch\n", "big": strings.Repeat("x", 4096)})
	os.Symlink("/etc/hostname", filepath.Join(dir, "Linked"))
	for _, tc := range []struct {
		name string
		opt  sandbox.ContextBuildOptions
		want string
	}{
		{"missing Dockerfile", sandbox.ContextBuildOptions{Dockerfile: "docker/Dockerfile.dev"}, "Dockerfile docker/Dockerfile.dev does not exist in the repository"},
		{"Dockerfile out of the context", sandbox.ContextBuildOptions{Dockerfile: "../Dockerfile"}, "want a clean path"},
		{"symlinked Dockerfile", sandbox.ContextBuildOptions{Dockerfile: "Linked"}, "not a regular file"},
		{"context over the cap", sandbox.ContextBuildOptions{Dockerfile: "Dockerfile", MaxContextSize: 1024}, "build context too large"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			tc.opt.Dir = dir
			_, err := buildContext(t, tc.opt)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("BuildContext = %v, want an error containing %q", err, tc.want)
			}
			if tc.opt.MaxContextSize > 0 && !errors.Is(err, docker.ErrContextTooLarge) {
				t.Errorf("error %v is not ErrContextTooLarge", err)
			}
		})
	}
}

// Tasks that need the same image at once wait for one build: only one of
// them sees the build's output, and all get the same image.
func TestBuildContextBuildsOnceForConcurrentTasks(t *testing.T) {
	dir := t.TempDir()
	writeTree(t, dir, map[string]string{"Dockerfile": "FROM " + dockertest.Busybox(t) + "\nLABEL nonce=" + sandbox.RandomID() + "\n"})
	e := dockertest.Engine(t)
	const n = 4
	var outs [n]strings.Builder
	imgs := make([]sandbox.BuiltImage, n)
	errs := make([]error, n)
	var wg sync.WaitGroup
	for i := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
			defer cancel()
			imgs[i], errs[i] = e.BuildContext(ctx, sandbox.ContextBuildOptions{Dir: dir, Dockerfile: "Dockerfile", Progress: &outs[i]})
		}()
	}
	wg.Wait()
	c := dockertest.Client(t)
	t.Cleanup(func() {
		c.ImageRemove(context.Background(), imgs[0].Ref, client.ImageRemoveOptions{Force: true, PruneChildren: true})
	})
	built := 0
	for i := range n {
		if errs[i] != nil || imgs[i].Ref != imgs[0].Ref {
			t.Errorf("build %d: %+v, %v; want %s", i, imgs[i], errs[i], imgs[0].Ref)
		}
		if strings.Contains(outs[i].String(), "Step 1/") {
			built++
		}
	}
	if built != 1 {
		t.Errorf("%d of %d concurrent calls built the image, want 1", built, n)
	}
}
