package docker

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"maps"
	"slices"
	"strings"

	cerrdefs "github.com/containerd/errdefs"
	"github.com/moby/moby/api/types/build"
	"github.com/moby/moby/client"
	"golang.org/x/sync/singleflight"

	"github.com/runner-dev/runner/sandbox"
)

var _ sandbox.ContextBuilder = (*Engine)(nil)

const (
	// buildRepo is the repository of images built from build contexts;
	// the tag is the start of the content hash.
	buildRepo = "runner-build"
	// labelBuildHash holds the whole content hash of a built image, so
	// an image is reused only when it is really the same content.
	labelBuildHash = "dev.runner.build-hash"
	// buildMemory bounds the memory of the build's containers.
	buildMemory = 4 << 30
)

// builds makes tasks that need the same image wait for one build.
var builds singleflight.Group

// BuildContext builds opt.Dockerfile with opt.Dir as the context; see
// sandbox.ContextBuilder. The image is tagged runner-build:<hash>, where
// the hash covers the context as sent (paths, modes, symlink targets,
// content), the Dockerfile's path, the arguments and the target: an
// unchanged context is not built again. The build's RUN steps have the
// engine's default network (bridge), as a setup phase does, and no
// credentials: no registry login, no secret, nothing of the host but the
// context.
func (e *Engine) BuildContext(ctx context.Context, opt sandbox.ContextBuildOptions) (sandbox.BuiltImage, error) {
	if opt.MaxContextSize <= 0 {
		opt.MaxContextSize = sandbox.DefaultMaxContextSize
	}
	if opt.Progress == nil {
		opt.Progress = io.Discard
	}
	bc, err := newBuildContext(opt.Dir, opt.Dockerfile, opt.MaxContextSize)
	if err != nil {
		return sandbox.BuiltImage{}, err
	}
	h := sha256.New()
	if err := bc.write(h); err != nil {
		return sandbox.BuiltImage{}, err
	}
	fmt.Fprintf(h, "\x00dockerfile=%s\x00target=%s\x00", opt.Dockerfile, opt.Target)
	for _, k := range slices.Sorted(maps.Keys(opt.Args)) {
		fmt.Fprintf(h, "arg %q=%q\x00", k, opt.Args[k])
	}
	sum := hex.EncodeToString(h.Sum(nil))
	ref := buildRepo + ":" + sum[:32]
	v, err, _ := builds.Do(ref, func() (any, error) {
		if img, ok, err := e.builtImage(ctx, ref, sum); err != nil || ok {
			img.Cached = true
			return img, err
		}
		if err := e.sendBuild(ctx, bc, opt, ref, sum); err != nil {
			return sandbox.BuiltImage{}, err
		}
		img, ok, err := e.builtImage(ctx, ref, sum)
		if err == nil && !ok {
			err = fmt.Errorf("build %s: the engine reports success but has no such image", opt.Dockerfile)
		}
		return img, err
	})
	img, _ := v.(sandbox.BuiltImage)
	return img, err
}

// builtImage looks for the image ref built from content sum.
func (e *Engine) builtImage(ctx context.Context, ref, sum string) (sandbox.BuiltImage, bool, error) {
	res, err := e.cli.ImageInspect(ctx, ref)
	switch {
	case cerrdefs.IsNotFound(err):
		return sandbox.BuiltImage{}, false, nil
	case err != nil:
		return sandbox.BuiltImage{}, false, e.explain("inspect image", "", err)
	}
	c := res.Config
	if c == nil || c.Labels[labelBuildHash] != sum {
		return sandbox.BuiltImage{}, false, nil // not ours, or damaged: build it again
	}
	return sandbox.BuiltImage{Ref: ref, User: c.User, Volumes: slices.Sorted(maps.Keys(c.Volumes))}, true, nil
}

func (e *Engine) sendBuild(ctx context.Context, bc *buildContext, opt sandbox.ContextBuildOptions, ref, sum string) error {
	pr, pw := io.Pipe()
	go func() { pw.CloseWithError(bc.write(pw)) }()
	defer pr.Close()
	args := map[string]*string{}
	for k, v := range opt.Args {
		args[k] = &v
	}
	res, err := e.cli.ImageBuild(ctx, pr, client.ImageBuildOptions{
		Tags: []string{ref}, Dockerfile: opt.Dockerfile, BuildArgs: args, Target: opt.Target,
		Labels: map[string]string{labelBuildHash: sum}, Remove: true, ForceRemove: true,
		Memory: buildMemory, MemorySwap: buildMemory, Version: build.BuilderV1,
	})
	if err != nil {
		return e.explain("build "+opt.Dockerfile, "", err)
	}
	defer res.Body.Close()
	var tail tailBuffer
	if err := readJSONStream(res.Body, io.MultiWriter(opt.Progress, &tail)); err != nil {
		return fmt.Errorf("build %s: %w\n%s", opt.Dockerfile, err, tail.String())
	}
	return nil
}

// tailBuffer keeps the last lines of a build's output, for its error.
type tailBuffer struct{ b []byte }

const tailSize = 4 << 10

func (t *tailBuffer) Write(p []byte) (int, error) {
	t.b = append(t.b, p...)
	if len(t.b) > 2*tailSize {
		t.b = append(t.b[:0], t.b[len(t.b)-tailSize:]...)
	}
	return len(p), nil
}

func (t *tailBuffer) String() string {
	b := t.b
	if len(b) > tailSize {
		b = b[len(b)-tailSize:]
		if i := bytes.IndexByte(b, '\n'); i >= 0 {
			b = b[i+1:]
		}
	}
	return strings.TrimSpace(string(b))
}

// ErrContextTooLarge: the build context is over its cap.
var ErrContextTooLarge = errors.New("build context too large")
