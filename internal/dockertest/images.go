package dockertest

import (
	"archive/tar"
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"io"
	"os"
	"os/exec"
	"strings"
	"sync"
	"testing"
	"time"

	runner "github.com/runner-dev/runner"
	"github.com/runner-dev/runner/sandbox"
	"github.com/runner-dev/runner/sandbox/docker"
)

// BusyboxPath is where Debian's busybox-static package puts the binary.
const BusyboxPath = "/bin/busybox"

var imageLocks sync.Map // tag -> *sync.Mutex

// Busybox returns a 2 MB image made of the host's static busybox: a shell,
// coreutils, find, grep, setsid, timeout. It is built once per machine
// (its tag names the binary's hash) with the engine's image import.
func Busybox(t testing.TB) string {
	t.Helper()
	e := Engine(t)
	bin, err := os.ReadFile(BusyboxPath)
	if err != nil {
		t.Fatalf("the sandbox tests need a static busybox at %s (apt-get install busybox-static): %v", BusyboxPath, err)
	}
	sum := sha256.Sum256(bin)
	tag := "runner-test-busybox:" + hex.EncodeToString(sum[:6])
	ensure(t, e, tag, func(ctx context.Context) error {
		rootfs, err := busyboxRootfs(bin, nil)
		if err != nil {
			return err
		}
		return e.ImportImage(ctx, rootfs, tag, "ENV PATH=/bin", "CMD [\"sh\"]")
	})
	return tag
}

// File is an extra file for BusyboxWith.
type File struct {
	Name     string // path in the image, without the leading slash
	Mode     int64  // permission and set-id bits
	Uid, Gid int
	Body     []byte
}

// BusyboxWith returns the busybox image with extra files added (a set-uid
// binary, say), built once per machine and content.
func BusyboxWith(t testing.TB, files ...File) string {
	t.Helper()
	e := Engine(t)
	bin, err := os.ReadFile(BusyboxPath)
	if err != nil {
		t.Fatalf("the sandbox tests need a static busybox at %s (apt-get install busybox-static): %v", BusyboxPath, err)
	}
	h := sha256.New()
	h.Write(bin)
	for _, f := range files {
		fmt.Fprintf(h, "%s %o %d %d\n", f.Name, f.Mode, f.Uid, f.Gid)
		h.Write(f.Body)
	}
	tag := "runner-test-busybox-plus:" + hex.EncodeToString(h.Sum(nil)[:6])
	ensure(t, e, tag, func(ctx context.Context) error {
		rootfs, err := busyboxRootfs(bin, files)
		if err != nil {
			return err
		}
		return e.ImportImage(ctx, rootfs, tag, "ENV PATH=/bin:/usr/local/bin", "CMD [\"sh\"]")
	})
	return tag
}

func busyboxRootfs(bin []byte, extra []File) (io.Reader, error) {
	out, err := exec.Command(BusyboxPath, "--list").Output()
	if err != nil {
		return nil, fmt.Errorf("list busybox applets: %w", err)
	}
	var buf bytes.Buffer
	tw := tar.NewWriter(&buf)
	dirs := map[string]int64{"bin/": 0o755, "etc/": 0o755, "tmp/": 0o1777, "root/": 0o700}
	for _, d := range []string{"bin/", "etc/", "tmp/", "root/"} {
		tw.WriteHeader(&tar.Header{Name: d, Typeflag: tar.TypeDir, Mode: dirs[d]})
	}
	tw.WriteHeader(&tar.Header{Name: "bin/busybox", Mode: 0o755, Size: int64(len(bin))})
	tw.Write(bin)
	for _, applet := range strings.Fields(string(out)) {
		if applet != "busybox" {
			tw.WriteHeader(&tar.Header{Name: "bin/" + applet, Typeflag: tar.TypeSymlink, Linkname: "busybox", Mode: 0o777})
		}
	}
	files := map[string]string{
		"etc/passwd": "root:x:0:0:root:/root:/bin/sh\nsandbox:x:1000:1000:sandbox:/home/sandbox:/bin/sh\n",
		"etc/group":  "root:x:0:\nsandbox:x:1000:\n",
	}
	for name, body := range files {
		tw.WriteHeader(&tar.Header{Name: name, Mode: 0o644, Size: int64(len(body))})
		io.WriteString(tw, body)
	}
	for _, f := range extra {
		tw.WriteHeader(&tar.Header{Name: f.Name, Mode: f.Mode, Uid: f.Uid, Gid: f.Gid, Size: int64(len(f.Body)), Format: tar.FormatPAX})
		tw.Write(f.Body)
	}
	return &buf, tw.Close()
}

// Debian returns a Debian bookworm image with the given packages, made by
// mmdebstrap from the machine's own apt sources (about a minute, once per
// machine and package list).
func Debian(t testing.TB, packages ...string) string {
	t.Helper()
	e := Engine(t)
	sum := sha256.Sum256([]byte(strings.Join(packages, ",")))
	tag := "runner-test-debian:bookworm-" + hex.EncodeToString(sum[:6])
	ensure(t, e, tag, func(ctx context.Context) error {
		if _, err := exec.LookPath("mmdebstrap"); err != nil {
			return fmt.Errorf("building a Debian test image needs mmdebstrap (apt-get install mmdebstrap): %w", err)
		}
		args := []string{"--variant=apt", "--quiet"}
		if len(packages) > 0 {
			args = append(args, "--include="+strings.Join(packages, ","))
		}
		args = append(args, "bookworm", "-")
		cmd := exec.CommandContext(ctx, "mmdebstrap", args...)
		var stderr bytes.Buffer
		cmd.Stderr = &stderr
		rootfs, err := cmd.StdoutPipe()
		if err != nil {
			return err
		}
		if err := cmd.Start(); err != nil {
			return err
		}
		ierr := e.ImportImage(ctx, rootfs, tag, "ENV PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin", "CMD [\"bash\"]")
		if werr := cmd.Wait(); werr != nil {
			return fmt.Errorf("mmdebstrap: %w: %s", werr, lastLines(stderr.String(), 10))
		}
		return ierr
	})
	return tag
}

// ensure builds tag with build unless the engine already has it.
func ensure(t testing.TB, e *docker.Engine, tag string, build func(context.Context) error) {
	t.Helper()
	mu, _ := imageLocks.LoadOrStore(tag, &sync.Mutex{})
	mu.(*sync.Mutex).Lock()
	defer mu.(*sync.Mutex).Unlock()
	ctx, cancel := context.WithTimeout(context.Background(), 15*time.Minute)
	defer cancel()
	ok, err := e.ImageExists(ctx, tag)
	if err != nil {
		t.Fatal(err)
	}
	if ok {
		return
	}
	start := time.Now()
	if err := build(ctx); err != nil {
		t.Fatalf("build test image %s: %v", tag, err)
	}
	t.Logf("built test image %s in %s", tag, time.Since(start).Round(time.Millisecond))
}

func lastLines(s string, n int) string {
	lines := strings.Split(strings.TrimSpace(s), "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, "\n")
}

// SandboxPackages are the packages of Dockerfile.sandbox, read from its
// PACKAGES argument.
func SandboxPackages(t testing.TB) []string {
	t.Helper()
	for _, line := range strings.Split(string(runner.SandboxDockerfile), "\n") {
		if v, ok := strings.CutPrefix(line, `ARG PACKAGES="`); ok {
			return strings.Fields(strings.TrimSuffix(v, `"`))
		}
	}
	t.Fatal("Dockerfile.sandbox has no ARG PACKAGES line")
	return nil
}

// SandboxImage returns the image built from the embedded Dockerfile.sandbox
// on a local Debian base that already has its packages, so the build needs
// no network. It is built once per machine and Dockerfile.
func SandboxImage(t testing.TB) string {
	t.Helper()
	e := Engine(t)
	base := Debian(t, SandboxPackages(t)...)
	sum := sha256.Sum256(append([]byte(base), runner.SandboxDockerfile...))
	tag := "runner-test-sandbox:" + hex.EncodeToString(sum[:6])
	ensure(t, e, tag, func(ctx context.Context) error {
		var out bytes.Buffer
		err := e.Build(ctx, sandbox.BuildOptions{
			Dockerfile: runner.SandboxDockerfile, Tag: tag, Args: map[string]string{"BASE_IMAGE": base}, Progress: &out,
		})
		if err != nil {
			return fmt.Errorf("%w\n%s", err, lastLines(out.String(), 20))
		}
		return nil
	})
	return tag
}
