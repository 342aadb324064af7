package main

import (
	"context"
	"errors"
	"io"

	"github.com/spf13/cobra"

	runner "github.com/runner-dev/runner"
	"github.com/runner-dev/runner/internal/cli"
	"github.com/runner-dev/runner/sandbox"
)

// newImageCmd groups the commands about the sandbox image.
func newImageCmd(d *deps) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "image",
		Short: "Build or check the sandbox image",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return cmd.Help()
		},
	}
	cmd.AddCommand(newImageBuildCmd(d, nil), newImageCheckCmd(d, nil))
	return cmd
}

type imageBuildOptions struct {
	printer *cli.Printer
	engine  func(context.Context) (sandbox.Backend, error)
	base    string
	tag     string
	quiet   bool
}

func newImageBuildCmd(d *deps, runF func(context.Context, *imageBuildOptions) error) *cobra.Command {
	opts := &imageBuildOptions{}
	cmd := &cobra.Command{
		Use:   "build",
		Short: "Build the sandbox image from the Dockerfile built into runner",
		Long: `Build the general-purpose sandbox image (bash, coreutils, git, make, gcc,
python3, jq...; user 1000; WORKDIR /workspace) with the Docker engine, from
the Dockerfile carried by the runner binary. No registry is needed when the
base image is present locally; packages the base already has are not
installed again, so a base that has them all builds offline.

The build's output streams to stderr; with --quiet it is kept back and only
its end is shown if the build fails.`,
		Example: "  runner image build\n  runner image build --base my-debian:12 --tag sandbox:offline",
		Args:    cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if err := d.jsonUnsupported(cmd); err != nil {
				return err
			}
			if err := d.backend.dockerOnly("runner image build", "build with Docker, then push the image to a registry the cluster pulls from or import it into the nodes' runtime (see Running on Kubernetes in the README)"); err != nil {
				return err
			}
			opts.printer, opts.engine = d.printer, d.engine
			if runF != nil {
				return runF(cmd.Context(), opts)
			}
			return runImageBuild(cmd.Context(), opts)
		},
	}
	f := cmd.Flags()
	f.StringVar(&opts.base, "base", "", "base `image` (the BASE_IMAGE build argument; default debian:bookworm-slim)")
	f.StringVar(&opts.tag, "tag", sandbox.DefaultImage, "`name` of the image to build")
	f.BoolVarP(&opts.quiet, "quiet", "q", false, "show the build's output only if it fails")
	f.StringVar(&d.backend.kind, "backend", "", "sandbox `backend`: docker only (images for a cluster are built with Docker and pushed)")
	return cmd
}

// buildTailSize is how much of a quiet build's output is kept for an error.
const buildTailSize = 16 << 10

func runImageBuild(ctx context.Context, opts *imageBuildOptions) error {
	e, err := opts.engine(ctx)
	if err != nil {
		return err
	}
	defer e.Close()
	stream := opts.printer.Stream() // the build's output, escaped line by line
	defer stream.Flush()
	bo := sandbox.BuildOptions{Dockerfile: runner.SandboxDockerfile, Tag: opts.tag, Progress: stream}
	if opts.base != "" {
		bo.Args = map[string]string{"BASE_IMAGE": opts.base}
	}
	var kept tailBuffer
	if opts.quiet {
		kept.max = buildTailSize
		bo.Progress = &kept
	}
	if err := e.Build(ctx, bo); err != nil {
		if opts.quiet && len(kept.buf) > 0 {
			io.WriteString(stream, kept.String())
		}
		return err
	}
	opts.printer.Success("built image %s", opts.tag)
	return nil
}

// tailBuffer keeps the last max bytes written to it.
type tailBuffer struct {
	max     int
	buf     []byte
	dropped bool
}

var _ io.Writer = (*tailBuffer)(nil)

func (t *tailBuffer) Write(p []byte) (int, error) {
	t.buf = append(t.buf, p...)
	if over := len(t.buf) - t.max; over > 0 {
		t.buf = append(t.buf[:0], t.buf[over:]...)
		t.dropped = true
	}
	return len(p), nil
}

// String is the text kept, marked when its beginning was dropped.
func (t *tailBuffer) String() string {
	if t.dropped {
		return "[…]" + string(t.buf)
	}
	return string(t.buf)
}

type imageCheckOptions struct {
	printer *cli.Printer
	json    bool
	engine  func(context.Context) (sandbox.Backend, error)
	image   string
}

func newImageCheckCmd(d *deps, runF func(context.Context, *imageCheckOptions) error) *cobra.Command {
	opts := &imageCheckOptions{}
	cmd := &cobra.Command{
		Use:   "check",
		Short: "Tell whether the sandbox image is present in the Docker engine (or the cluster)",
		Long: `Tell whether the engine has the sandbox image; with --backend kubernetes,
whether a pod of the image can start in the cluster. Exit code 0 when it does, 2
(a configuration error) when it does not, with the command that builds it.
With --json, print {"image": NAME, "present": BOOL}.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			opts.printer, opts.json, opts.engine = d.printer, d.globals.json, d.engine
			if runF != nil {
				return runF(cmd.Context(), opts)
			}
			return runImageCheck(cmd.Context(), opts)
		},
	}
	cmd.Flags().StringVar(&opts.image, "image", sandbox.DefaultImage, "`name` of the image to look for")
	d.backend.register(cmd)
	return cmd
}

func runImageCheck(ctx context.Context, opts *imageCheckOptions) error {
	e, err := opts.engine(ctx)
	if err != nil {
		return err
	}
	defer e.Close()
	err = e.CheckImage(ctx, opts.image)
	ok := err == nil
	if err != nil && !errors.Is(err, sandbox.ErrImageNotFound) {
		return err
	}
	if opts.json {
		if err := opts.printer.JSON(struct {
			Image   string `json:"image"`
			Present bool   `json:"present"`
		}{opts.image, ok}); err != nil {
			return err
		}
	} else if ok {
		opts.printer.Success("image %s is present", opts.image)
	}
	return err
}
