package kubernetes

import (
	"context"
	"errors"
	"fmt"
	"io"
	"strconv"
	"sync"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/tools/remotecommand"
	utilexec "k8s.io/client-go/util/exec"
	"k8s.io/streaming/pkg/httpstream"
)

// prelude runs before every command of the sandbox, as sh -c prelude
// runner-env NOFILE DIR KEY=VALUE... -- ARGV...: it lowers the open-files
// limit (Kubernetes has no setting for it), enters DIR, exports the
// entries and runs ARGV. Exec through the API server has no environment
// or working directory of its own.
const prelude = `ulimit -n "$1" || exit 125
cd "$2" || exit 125
shift 2
while [ "$#" -gt 0 ] && [ "$1" != -- ]; do export "$1"; shift; done
shift
exec "$@"`

// command is the argv of an exec that runs argv in dir with env added.
func (s *Sandbox) command(dir string, env []string, argv ...string) []string {
	cmd := []string{"sh", "-c", prelude, "runner-env", strconv.FormatInt(s.cfg.NoFile, 10), dir}
	cmd = append(cmd, env...)
	cmd = append(cmd, "--")
	return append(cmd, argv...)
}

// executor makes the stream of one exec of argv: WebSocket first, SPDY
// only when the upgrade to WebSocket fails (an older server, a proxy that
// does not pass it), as kubectl does; never after the command started,
// which would run it twice. The upgrade error is client-go's own, from
// k8s.io/streaming (apimachinery's httpstream has a type of the same name
// that client-go no longer returns).
func (b *Backend) executor(pod string, argv []string, stdin bool) (remotecommand.Executor, error) {
	req := b.cs.CoreV1().RESTClient().Post().Resource("pods").Namespace(b.namespace).Name(pod).SubResource("exec").
		VersionedParams(&corev1.PodExecOptions{
			Container: containerName, Command: argv, Stdin: stdin, Stdout: true, Stderr: true,
		}, scheme.ParameterCodec)
	ws, err := remotecommand.NewWebSocketExecutor(b.rc, "GET", req.URL().String())
	if err != nil {
		return nil, fmt.Errorf("exec over WebSocket: %w", err)
	}
	spdy, err := remotecommand.NewSPDYExecutor(b.rc, "POST", req.URL())
	if err != nil {
		return nil, fmt.Errorf("exec over SPDY: %w", err)
	}
	return remotecommand.NewFallbackExecutor(ws, spdy, httpstream.IsUpgradeFailure)
}

// stream runs argv in the pod with the given streams until it ends or ctx
// does. code is the command's exit code; err an infrastructure failure.
func (s *Sandbox) stream(ctx context.Context, argv []string, stdin io.Reader, stdout, stderr io.Writer) (code int, err error) {
	ex, err := s.b.executor(s.name, argv, stdin != nil)
	if err != nil {
		return 0, err
	}
	err = ex.StreamWithContext(ctx, remotecommand.StreamOptions{Stdin: stdin, Stdout: stdout, Stderr: stderr})
	var exitErr utilexec.CodeExitError
	switch {
	case err == nil:
		return 0, nil
	case errors.As(err, &exitErr):
		return exitErr.Code, nil
	}
	return 0, err
}

// execError explains a failed stream: most often the pod is gone.
func (s *Sandbox) execError(ctx context.Context, op string, err error) error {
	if serr := s.stoppedError(ctx); serr != nil {
		return fmt.Errorf("%s: %w", op, serr)
	}
	if errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded) {
		return fmt.Errorf("%s: %w", op, err)
	}
	return s.b.explain(op, "pods/exec", err)
}

// lockedWriter serializes the writes of the stdout and stderr copiers.
type lockedWriter struct {
	mu *sync.Mutex
	w  io.Writer
}

func (l lockedWriter) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.w.Write(p)
}
