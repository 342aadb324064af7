package docker

import (
	"archive/tar"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"

	cerrdefs "github.com/containerd/errdefs"
	"github.com/moby/moby/api/types/jsonstream"
	"github.com/moby/moby/client"

	"github.com/runner-dev/runner/sandbox"
)

// ImageExists reports whether the engine has the image ref.
func (e *Engine) ImageExists(ctx context.Context, ref string) (bool, error) {
	_, err := e.cli.ImageInspect(ctx, ref)
	switch {
	case err == nil:
		return true, nil
	case cerrdefs.IsNotFound(err):
		return false, nil
	}
	return false, e.explain("inspect image", "", err)
}

// CheckImage tells whether the engine has the image ref; see
// sandbox.Backend.
func (e *Engine) CheckImage(ctx context.Context, ref string) error {
	ok, err := e.ImageExists(ctx, ref)
	switch {
	case err != nil:
		return err
	case !ok:
		return &sandbox.ImageError{Image: ref}
	}
	return nil
}

// Build builds an image with the engine. It needs no registry when the
// base image is already present.
func (e *Engine) Build(ctx context.Context, opt sandbox.BuildOptions) error {
	if opt.Tag == "" {
		opt.Tag = sandbox.DefaultImage
	}
	if opt.Progress == nil {
		opt.Progress = io.Discard
	}
	var buf bytes.Buffer
	tw := tar.NewWriter(&buf)
	tw.WriteHeader(&tar.Header{Name: "Dockerfile", Mode: 0o644, Size: int64(len(opt.Dockerfile))})
	tw.Write(opt.Dockerfile)
	if err := tw.Close(); err != nil {
		return fmt.Errorf("build image: %w", err)
	}
	args := map[string]*string{}
	for k, v := range opt.Args {
		args[k] = &v
	}
	res, err := e.cli.ImageBuild(ctx, &buf, client.ImageBuildOptions{
		Tags: []string{opt.Tag}, BuildArgs: args, Remove: true, ForceRemove: true,
		Dockerfile: "Dockerfile",
	})
	if err != nil {
		return e.explain("build image "+opt.Tag, "", err)
	}
	defer res.Body.Close()
	if err := readJSONStream(res.Body, opt.Progress); err != nil {
		return fmt.Errorf("build image %s: %w", opt.Tag, err)
	}
	return nil
}

// ImportImage creates the image ref from a root filesystem tar stream,
// applying Dockerfile-style changes such as "ENV PATH=/bin".
func (e *Engine) ImportImage(ctx context.Context, rootfs io.Reader, ref string, changes ...string) error {
	res, err := e.cli.ImageImport(ctx, client.ImageImportSource{Source: rootfs, SourceName: "-"}, ref,
		client.ImageImportOptions{Changes: changes})
	if err != nil {
		return e.explain("import image "+ref, "", err)
	}
	defer res.Close()
	if err := readJSONStream(res, io.Discard); err != nil {
		return fmt.Errorf("import image %s: %w", ref, err)
	}
	return nil
}

// readJSONStream copies the text of an engine progress stream to w and
// returns the error the stream reports, if any.
func readJSONStream(r io.Reader, w io.Writer) error {
	dec := json.NewDecoder(r)
	for {
		var m jsonstream.Message
		if err := dec.Decode(&m); err != nil {
			if errors.Is(err, io.EOF) {
				return nil
			}
			return err
		}
		if m.Error != nil {
			return errors.New(m.Error.Message)
		}
		if m.Stream != "" {
			io.WriteString(w, m.Stream)
		} else if m.Status != "" {
			fmt.Fprintln(w, m.Status)
		}
	}
}
