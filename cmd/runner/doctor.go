package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"slices"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/runner-dev/runner/internal/cli"
	"github.com/runner-dev/runner/sandbox"
)

// runscAdvice says how to give a Docker engine gVisor's runtime.
const runscAdvice = `to add it, install runsc (Debian: apt-get install runsc), declare it in /etc/docker/daemon.json
    "runtimes": {"runsc": {"path": "/usr/bin/runsc", "runtimeArgs": ["--network=none"]}}
  (keep the file's other keys), then reload the daemon, which leaves running containers alone:
    kill -HUP $(pidof dockerd)`

// runtimeAdvice says how to add runtime rt to the engine.
func runtimeAdvice(rt string) string {
	if rt == "runsc" {
		return runscAdvice
	}
	return `to add it, declare it under "runtimes" in the daemon's configuration (/etc/docker/daemon.json), then reload the daemon: kill -HUP $(pidof dockerd)`
}

type doctorOptions struct {
	printer  *cli.Printer
	json     bool
	engine   func(context.Context) (sandbox.Backend, error)
	image    string
	runtimes []string
	// kubernetes is set for --backend kubernetes.
	kubernetes bool
}

// orDefault names the empty runtime "default".
func orDefault(rt string) string {
	if rt == "" {
		return "default"
	}
	return rt
}

// runtimeList lists runtimes, the empty one as "default".
func runtimeList(rts []string) string {
	out := make([]string, len(rts))
	for i, rt := range rts {
		out[i] = orDefault(rt)
	}
	return strings.Join(out, ", ")
}

func newDoctorCmd(d *deps, runF func(context.Context, *doctorOptions) error) *cobra.Command {
	opts := &doctorOptions{}
	cmd := &cobra.Command{
		Use:   "doctor",
		Short: "Tell whether the engine can run sandboxes: reachable, image, runtimes",
		Long: `Check what a run needs from the Docker engine: that it answers, that it has
the sandbox image, and which isolation runtimes it offers (runc; runsc for
gVisor), with how to add the ones it lacks. Each runtime the engine has is
tried: a sandbox is started from the image and runs a command.

With --backend kubernetes, check the cluster instead: the API server's
version, the namespace, each permission runner needs there (pods, pods/exec,
networkpolicies; runtimeclasses cluster-wide), and each RuntimeClass, tried
with a pod of the image.

Exit code 0 when the engine answers, has the image and every runtime asked
for with --runtime works; 2 otherwise. With --json, print the findings.`,
		Example: "  runner doctor\n  runner doctor --runtime runsc",
		Args:    cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if err := d.backend.check(); err != nil {
				return err
			}
			opts.printer, opts.json, opts.engine, opts.kubernetes = d.printer, d.globals.json, d.engine, d.backend.kubernetes()
			if runF != nil {
				return runF(cmd.Context(), opts)
			}
			return runDoctor(cmd.Context(), opts)
		},
	}
	f := cmd.Flags()
	f.StringVar(&opts.image, "image", sandbox.DefaultImage, "sandbox `image` to look for and to try the runtimes with")
	f.StringSliceVar(&opts.runtimes, "runtime", nil, "`runtime` that must work (repeatable: runc, runsc; a RuntimeClass with --backend kubernetes)")
	d.backend.register(cmd)
	return cmd
}

// finding is one line of the doctor's report.
type finding struct {
	Check  string `json:"check"`
	OK     bool   `json:"ok"`
	Detail string `json:"detail,omitempty"`
	Advice string `json:"advice,omitempty"`
	// Required findings that are not OK make the exit code 2.
	Required bool `json:"required"`
}

func runDoctor(ctx context.Context, opts *doctorOptions) error {
	var found []finding
	add := func(f finding) { found = append(found, f) }
	e, err := opts.engine(ctx)
	if err != nil {
		advice := "start Docker or set DOCKER_HOST"
		if opts.kubernetes {
			advice = "set KUBECONFIG (or --kube-context) to a cluster that answers, with the permissions of examples/kubernetes/role.yaml"
		}
		add(finding{Check: "engine", Detail: err.Error(), Advice: advice, Required: true})
		return reportDoctor(opts, found)
	}
	defer e.Close()
	info, err := e.Info(ctx)
	if err != nil {
		add(finding{Check: "engine", Detail: err.Error(), Required: true})
		return reportDoctor(opts, found)
	}
	detail := fmt.Sprintf("%s %s at %s; runtimes %s", info.Kind, info.Version, info.Address, runtimeList(info.Runtimes))
	if info.DefaultRuntime != "" {
		detail += fmt.Sprintf(" (default %s)", info.DefaultRuntime)
	}
	add(finding{Check: "engine", OK: true, Required: true, Detail: detail})
	if opts.kubernetes {
		found = append(found, kubernetesFindings(ctx, e)...)
	}

	imageErr := e.CheckImage(ctx, opts.image)
	img := finding{Check: "image " + opts.image, OK: imageErr == nil, Required: true}
	if imageErr != nil {
		img.Detail = imageErr.Error()
		var ie *sandbox.ImageError
		if errors.As(imageErr, &ie) {
			img.Detail, img.Advice = "not found", ie.Advice()
		}
	}
	if opts.kubernetes && imageErr == nil {
		img.Detail = "the cluster pulls it when a pod starts: tried below"
	}
	add(img)

	wanted := append([]string{"runc", "runsc"}, opts.runtimes...)
	if opts.kubernetes {
		// The cluster's RuntimeClasses, and its nodes' default ("").
		wanted = append(slices.Clone(info.Runtimes), opts.runtimes...)
	}
	slices.Sort(wanted)
	for _, rt := range slices.Compact(wanted) {
		f := finding{Check: "runtime " + orDefault(rt), Required: slices.Contains(opts.runtimes, rt) || opts.kubernetes && rt == ""}
		switch {
		case !slices.Contains(info.Runtimes, rt) && opts.kubernetes:
			f.Detail, f.Advice = "the cluster has no RuntimeClass "+rt, "ask the cluster's administrators for one (gVisor: a RuntimeClass whose handler is runsc, on nodes with containerd's runsc shim)"
		case !slices.Contains(info.Runtimes, rt):
			f.Detail, f.Advice = "not available in the engine", runtimeAdvice(rt)
		case imageErr != nil:
			f.Detail = "available; not tried without the image"
		default:
			network := "" // none: Docker's loopback-only network needs nothing of the engine
			if opts.kubernetes {
				network = "bridge" // network none is tried on its own, below
			}
			f.OK, f.Detail = tryRuntime(ctx, e, opts.image, rt, network)
			if !f.OK && rt == "runsc" && !opts.kubernetes {
				f.Advice = runscAdvice
			}
		}
		add(f)
	}
	if opts.kubernetes && imageErr == nil {
		// network none holds only where the cluster enforces the deny-all
		// egress policy: the sandbox's own probe says whether it does.
		f := finding{Check: "network none"}
		f.OK, f.Detail = tryRuntime(ctx, e, opts.image, "", "none")
		if !f.OK {
			f.Advice = "tasks with network: none fail closed on this cluster; use a network plugin that enforces NetworkPolicy egress rules, or network: bridge"
		}
		add(f)
	}
	return reportDoctor(opts, found)
}

// tryRuntime starts a sandbox of image under runtime rt, runs a command in
// it and removes it.
func tryRuntime(ctx context.Context, b sandbox.Backend, image, rt, network string) (bool, string) {
	ctx, cancel := context.WithTimeout(ctx, 2*time.Minute)
	defer cancel()
	start := time.Now()
	sb, err := b.Start(ctx, sandbox.Config{
		Image: image, Runtime: rt, Network: network, Lifetime: 5 * time.Minute,
		RunID: fmt.Sprintf("doctor-%d", os.Getpid()), TaskID: "doctor-" + orDefault(rt) + "-" + orDefault(network),
	})
	if err != nil {
		return false, err.Error()
	}
	defer sb.Close(context.WithoutCancel(ctx))
	res, err := sb.Exec(ctx, "true", sandbox.ExecOptions{Timeout: time.Minute})
	switch {
	case err != nil:
		return false, err.Error()
	case res.ExitCode != 0:
		return false, fmt.Sprintf("a command in the sandbox exited with code %d: %s", res.ExitCode, strings.TrimSpace(res.Output))
	}
	return true, fmt.Sprintf("a sandbox started and ran a command in %s", time.Since(start).Round(10*time.Millisecond))
}

// reportDoctor prints the findings and returns the exit status they call
// for.
func reportDoctor(opts *doctorOptions, found []finding) error {
	failed := false
	for _, f := range found {
		failed = failed || f.Required && !f.OK
	}
	p := opts.printer
	if opts.json {
		if err := p.JSON(struct {
			OK       bool      `json:"ok"`
			Findings []finding `json:"findings"`
		}{!failed, found}); err != nil {
			return err
		}
	} else {
		for _, f := range found {
			mark := "ok  "
			if !f.OK {
				mark = "FAIL"
				if !f.Required {
					mark = "--  "
				}
			}
			p.Line("%s %s: %s", mark, f.Check, f.Detail)
			if f.Advice != "" && !f.OK {
				for _, line := range strings.Split(f.Advice, "\n") {
					p.Line("     %s", line)
				}
			}
		}
	}
	if failed {
		return &cli.ExitError{Code: cli.ExitUsage, Err: errors.New("the engine cannot run sandboxes as asked: see above")}
	}
	return nil
}
