package main

import (
	"fmt"
	"net"
	"slices"
	"strconv"
	"strings"

	"github.com/spf13/cobra"

	"github.com/runner-dev/runner/internal/batch"
	"github.com/runner-dev/runner/internal/cli"
	"github.com/runner-dev/runner/tasks"
)

// backendFlags choose the sandbox backend of a command: --backend, or the
// task file's backend:, else Docker; and the Kubernetes backend's settings.
type backendFlags struct {
	kind        string
	namespace   string
	kubeContext string
	egressProbe []string
	// file is where the kind came from when the task file named it
	// ("tasks.yaml:3"); empty when it came from --backend or the default.
	file string
}

// register adds --backend and the Kubernetes flags to cmd.
func (b *backendFlags) register(cmd *cobra.Command) {
	f := cmd.Flags()
	f.StringVar(&b.kind, "backend", "", "sandbox `backend`: docker or kubernetes (default: the task file's backend:, else docker)")
	f.StringVar(&b.namespace, "namespace", "", "Kubernetes `namespace` of the sandboxes (default: the kubeconfig's, else default)")
	f.StringVar(&b.kubeContext, "kube-context", "", "kubeconfig `context` to use (default: the current one; the kubeconfig is $KUBECONFIG, else ~/.kube/config, else in-cluster)")
	f.StringArrayVar(&b.egressProbe, "egress-probe", nil, "`HOST:PORT` outside the cluster that a network: none pod must not reach (repeatable; the API server is always probed)")
}

// name is the backend chosen: docker unless --backend or the file says
// otherwise.
func (b *backendFlags) name() string {
	if b.kind == "" {
		return tasks.BackendDocker
	}
	return b.kind
}

// kubernetes reports whether the Kubernetes backend is chosen.
func (b *backendFlags) kubernetes() bool { return b.name() == tasks.BackendKubernetes }

// what names where the choice came from, for messages: "--backend
// kubernetes" or "backend: kubernetes (tasks.yaml:3)".
func (b *backendFlags) what() string {
	if b.file != "" {
		return fmt.Sprintf("backend: %s (%s)", b.name(), b.file)
	}
	return "--backend " + b.name()
}

// check refuses a bad --backend, Kubernetes flags without the Kubernetes
// backend, and a bad --egress-probe.
func (b *backendFlags) check() error {
	if b.kind != "" && !slices.Contains(tasks.Backends, b.kind) {
		return cli.Usagef("--backend %q: want %s", b.kind, strings.Join(tasks.Backends, " or "))
	}
	if !b.kubernetes() {
		for _, f := range []struct {
			name string
			set  bool
		}{{"--namespace", b.namespace != ""}, {"--kube-context", b.kubeContext != ""}, {"--egress-probe", len(b.egressProbe) > 0}} {
			if f.set {
				return cli.Usagef("%s is for the kubernetes backend; the sandboxes run with %s", f.name, b.what())
			}
		}
	}
	for _, p := range b.egressProbe {
		if err := checkHostPort(p); err != nil {
			return cli.Usagef("--egress-probe %q: %v", p, err)
		}
	}
	return nil
}

// checkHostPort accepts HOST:PORT with a port number from 1 to 65535.
func checkHostPort(s string) error {
	host, port, err := net.SplitHostPort(s)
	if err != nil {
		return fmt.Errorf("want HOST:PORT (%v)", err)
	}
	if host == "" {
		return fmt.Errorf("want HOST:PORT, the host is missing")
	}
	if n, err := strconv.Atoi(port); err != nil || n < 1 || n > 65535 {
		return fmt.Errorf("want HOST:PORT with a port from 1 to 65535, got port %q", port)
	}
	return nil
}

// fromQueue takes the backend a task file's defaults name, unless
// --backend chose one; the two naming different backends is a usage error.
func (b *backendFlags) fromQueue(q *tasks.Queue) error {
	if q.Backend == "" {
		return b.check()
	}
	where := fmt.Sprintf("%s:%d", q.File, q.BackendLine)
	switch {
	case b.kind == "":
		b.kind, b.file = q.Backend, where
	case b.kind != q.Backend:
		return cli.Usagef("--backend %s, but %s says backend: %s; drop one", b.kind, where, q.Backend)
	}
	return b.check()
}

// refusals are the problems of running queue on the chosen backend: what
// the tasks ask that the backend does not offer, each naming the task, its
// place and the key. defaultImage is --image, for tasks that name none.
func (b *backendFlags) refusals(queue []tasks.Task, defaultImage string) []tasks.Problem {
	if !b.kubernetes() {
		return nil
	}
	var out []tasks.Problem
	// add records "WHAT is not supported with --backend kubernetes; ADVICE".
	add := func(t tasks.Task, field, what, advice string) {
		out = append(out, taskProblem(t, field, "%s is not supported with %s; %s", what, b.what(), advice))
	}
	for _, t := range queue {
		if len(t.Setup.Commands) > 0 {
			add(t, "setup", "setup", "prepared environments need the Docker backend: put what the setup installs in the image")
		}
		switch {
		case t.Build != nil:
			add(t, "image", "image: "+t.Build.String(), "images are built with Docker: build and push the image, then name it in image:")
		case t.Image == "":
			if ib, ok, err := tasks.ParseImageBuild(defaultImage); ok && err == nil {
				add(t, "image", "--image "+ib.String(), "images are built with Docker: build and push the image, then name it in --image")
			}
		}
		if t.Network == tasks.NetworkAllowlist {
			add(t, "network", "an egress allowlist (network: {allow: ...})", "use network: none or bridge")
		}
	}
	return out
}

// refuse returns the refusals of queue as one configuration error (exit
// code 2), before anything starts.
func (b *backendFlags) refuse(queue []tasks.Task, defaultImage string) error {
	ps := b.refusals(queue, defaultImage)
	if len(ps) == 0 {
		return nil
	}
	lines := make([]string, len(ps))
	for i, p := range ps {
		lines[i] = problemText(p)
	}
	return &cli.ExitError{Code: cli.ExitUsage, Err: &batch.ConfigError{Problems: lines}}
}

// dockerOnly refuses a command that only the Docker backend offers.
func (b *backendFlags) dockerOnly(what, instead string) error {
	if err := b.check(); err != nil {
		return err
	}
	if b.kubernetes() {
		return cli.Usagef("%s needs the Docker backend, not %s; %s", what, b.what(), instead)
	}
	return nil
}
