package kubernetes

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/runner-dev/runner/sandbox"
)

// Sandbox is a sandbox.Sandbox backed by one pod.
type Sandbox struct {
	b        *Backend
	name     string
	cfg      sandbox.Config
	deadline time.Time
	policy   bool          // a NetworkPolicy of the same name exists
	ch       *channelState // nil without a channel

	mu        sync.Mutex
	stopped   bool
	closed    bool
	closeErr  error
	closeOnce sync.Once
}

var (
	_ sandbox.Sandbox      = (*Sandbox)(nil)
	_ sandbox.Checkpointer = (*Sandbox)(nil)
)

// startTimeout bounds the wait for a pod to run (scheduling, the image's
// pull, the preparing container).
var startTimeout = 3 * time.Minute

// Start is StartPod for callers that know only sandbox.Backend.
func (b *Backend) Start(ctx context.Context, cfg sandbox.Config) (sandbox.Sandbox, error) {
	s, err := b.StartPod(ctx, cfg)
	if err != nil {
		return nil, err
	}
	return s, nil
}

// StartPod creates the sandbox's pod (and, for network "none", the policy
// that denies its egress, and proves it holds), waits for it to run and
// copies cfg.Workspace in. If anything fails, what it created is deleted.
func (b *Backend) StartPod(ctx context.Context, cfg sandbox.Config) (*Sandbox, error) {
	cfg, err := cfg.WithDefaults()
	if err != nil {
		return nil, err
	}
	if len(cfg.Egress) > 0 {
		return nil, fmt.Errorf("start sandbox: an egress allowlist: %w on kubernetes (use network: none, or bridge)", sandbox.ErrUnsupported)
	}
	if cfg.Runtime != "" {
		rts, err := b.runtimes(ctx)
		if err != nil {
			return nil, err
		}
		if !contains(rts, cfg.Runtime) {
			return nil, refused("start sandbox: runtime %q: the cluster has no such RuntimeClass (it has %q)", cfg.Runtime, rts[1:])
		}
	}
	if cfg.Network == "none" && b.opt.Helper == "" {
		return nil, refused("start sandbox: network none: no egress probe helper is configured, so the sandbox's lack of egress cannot be proven (give one, or use network: bridge)")
	}
	deadline := time.Now().Add(cfg.Lifetime)
	name := podName(cfg)
	s := &Sandbox{b: b, name: name, cfg: cfg, deadline: deadline}
	ok := false
	defer func() {
		if !ok {
			s.Close(ctx)
		}
	}()
	if cfg.Network == "none" {
		// Before the pod, so that it never runs without the policy.
		s.policy = true
		if _, err := b.cs.NetworkingV1().NetworkPolicies(b.namespace).Create(ctx, b.policySpec(cfg, name, deadline), metav1.CreateOptions{}); err != nil {
			return nil, b.explain("create network policy "+name, "networkpolicies", err)
		}
		if err := b.noOtherPolicyOpens(ctx, labels(cfg, name), name); err != nil {
			return nil, err
		}
	}
	if _, err := b.cs.CoreV1().Pods(b.namespace).Create(ctx, b.podSpec(cfg, name, deadline), metav1.CreateOptions{}); err != nil {
		return nil, b.explain("create pod "+name, "pods", err)
	}
	if err := s.waitRunning(ctx); err != nil {
		return nil, err
	}
	if cfg.Network == "none" {
		if err := s.proveNoEgress(ctx); err != nil {
			return nil, err
		}
	}
	s.startChannel(ctx)
	if err := s.copyIn(ctx, cfg.Workspace); err != nil {
		return nil, err
	}
	ok = true
	return s, nil
}

func contains(list []string, s string) bool {
	for _, e := range list {
		if e == s {
			return true
		}
	}
	return false
}

// imageFailures are the waiting reasons of a container whose image the
// node cannot get: the pod will not start by itself.
var imageFailures = map[string]bool{
	"ErrImagePull": true, "ImagePullBackOff": true, "ErrImageNeverPull": true,
	"InvalidImageName": true, "ImageInspectError": true,
}

// waitRunning polls the pod until its sandbox container runs, failing at
// once on a state it cannot leave (an image the node cannot get, a
// container that cannot be created, the pod ended).
func (s *Sandbox) waitRunning(ctx context.Context) error {
	ctx, cancel := context.WithTimeout(ctx, startTimeout)
	defer cancel()
	wait := 50 * time.Millisecond
	for {
		pod, err := s.b.cs.CoreV1().Pods(s.b.namespace).Get(ctx, s.name, metav1.GetOptions{})
		if err != nil {
			if ctx.Err() != nil {
				return fmt.Errorf("start sandbox: pod %s did not run within %s: %w", s.name, startTimeout, ctx.Err())
			}
			return s.b.explain("get pod "+s.name, "pods", err)
		}
		if done, err := runState(pod, s.cfg.Image); done {
			return err
		}
		select {
		case <-ctx.Done():
			why := "still " + string(pod.Status.Phase)
			if c := waitingReason(pod); c != "" {
				why += " (" + c + ")"
			}
			return fmt.Errorf("start sandbox: pod %s did not run within %s: %s: %w", s.name, startTimeout, why, ctx.Err())
		case <-time.After(wait):
		}
		wait = min(wait*2, 500*time.Millisecond)
	}
}

// runState tells whether pod has reached a state the wait is over for:
// running (nil), or one it cannot leave (the error).
func runState(pod *corev1.Pod, image string) (bool, error) {
	all := append(append([]corev1.ContainerStatus(nil), pod.Status.InitContainerStatuses...), pod.Status.ContainerStatuses...)
	for _, c := range all {
		if w := c.State.Waiting; w != nil {
			switch {
			case imageFailures[w.Reason]:
				return true, fmt.Errorf("start sandbox: the cluster cannot get the image (%s: %s): %w", w.Reason, w.Message, &sandbox.ImageError{Image: image})
			case w.Reason == "CreateContainerConfigError" || w.Reason == "CreateContainerError" || w.Reason == "RunContainerError":
				return true, refused("start sandbox: pod %s: %s: %s", pod.Name, w.Reason, w.Message)
			}
		}
		if t := c.State.Terminated; t != nil && (t.ExitCode != 0 || c.Name == containerName) {
			return true, fmt.Errorf("start sandbox: pod %s: container %s ended (%s, exit code %d): %s", pod.Name, c.Name, t.Reason, t.ExitCode, strings.TrimSpace(t.Message))
		}
	}
	switch pod.Status.Phase {
	case corev1.PodFailed, corev1.PodSucceeded:
		return true, fmt.Errorf("start sandbox: pod %s ended before it ran: %s %s", pod.Name, pod.Status.Reason, pod.Status.Message)
	}
	for _, c := range pod.Status.ContainerStatuses {
		if c.Name == containerName && c.State.Running != nil {
			return true, nil
		}
	}
	return false, nil
}

func waitingReason(pod *corev1.Pod) string {
	for _, c := range pod.Status.Conditions {
		if c.Status == corev1.ConditionFalse && c.Message != "" {
			return c.Message
		}
	}
	return ""
}

// Name is the pod's name.
func (s *Sandbox) Name() string { return s.name }

// Deadline is when the sandbox expires by itself.
func (s *Sandbox) Deadline() time.Time { return s.deadline }

// usable returns an error when the sandbox can no longer run commands.
func (s *Sandbox) usable() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	switch {
	case s.closed:
		return sandbox.ErrClosed
	case s.stopped:
		return sandbox.ErrStopped
	}
	return nil
}

// closeTimeout bounds Close.
const closeTimeout = 45 * time.Second

// Close deletes the pod and its policy. It is idempotent, and it works
// with an already cancelled ctx.
func (s *Sandbox) Close(ctx context.Context) error {
	s.closeOnce.Do(func() {
		s.mu.Lock()
		s.closed = true
		s.mu.Unlock()
		s.closeChannel()
		ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), closeTimeout)
		defer cancel()
		var errs []error
		// The policy goes only once the pod is gone from the node: a pod
		// whose deletion failed, or whose processes still run, keeps its
		// network held (Cleanup removes the pair later).
		if err := s.b.deletePod(ctx, s.name); err != nil {
			errs = append(errs, err)
		} else if err := s.b.waitPodsGone(ctx, s.name); err != nil {
			errs = append(errs, err)
		} else if s.policy {
			err := s.b.cs.NetworkingV1().NetworkPolicies(s.b.namespace).Delete(ctx, s.name, metav1.DeleteOptions{})
			if err != nil && !apierrors.IsNotFound(err) {
				errs = append(errs, s.b.explain("delete network policy "+s.name, "networkpolicies", err))
			}
		}
		s.closeErr = errors.Join(errs...)
	})
	return s.closeErr
}

// seenStopped reports whether one look at the pod finds it gone, being
// deleted, or its sandbox container not running; an answer the API server
// could not give counts as running.
func (s *Sandbox) seenStopped(ctx context.Context) bool {
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 10*time.Second)
	defer cancel()
	pod, err := s.b.cs.CoreV1().Pods(s.b.namespace).Get(ctx, s.name, metav1.GetOptions{})
	if err != nil {
		return apierrors.IsNotFound(err)
	}
	if pod.DeletionTimestamp != nil || pod.Status.Phase != corev1.PodRunning {
		return true
	}
	for _, c := range pod.Status.ContainerStatuses {
		if c.Name == containerName {
			return c.State.Running == nil
		}
	}
	return false
}

// stoppedError explains why the pod no longer runs, for a caller whose
// command was cut short; nil when it still runs.
func (s *Sandbox) stoppedError(ctx context.Context) error {
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 10*time.Second)
	defer cancel()
	pod, err := s.b.cs.CoreV1().Pods(s.b.namespace).Get(ctx, s.name, metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		return fmt.Errorf("sandbox %s was removed from outside: %w", s.name, sandbox.ErrStopped)
	}
	if err != nil {
		return s.b.explain("get pod "+s.name, "pods", err)
	}
	if pod.DeletionTimestamp != nil {
		return fmt.Errorf("sandbox %s is being deleted: %w", s.name, sandbox.ErrStopped)
	}
	for _, c := range pod.Status.ContainerStatuses {
		if c.Name != containerName {
			continue
		}
		if c.State.Running != nil && pod.Status.Phase == corev1.PodRunning {
			return nil
		}
		why := "its container is not running"
		if t := c.State.Terminated; t != nil {
			why = fmt.Sprintf("%s, exit code %d", t.Reason, t.ExitCode)
			if t.Reason == "OOMKilled" {
				why = "killed for using more memory than its limit"
			}
		}
		if pod.Status.Reason == "DeadlineExceeded" || !time.Now().Before(s.deadline) {
			why = "its lifetime is over"
		}
		return fmt.Errorf("sandbox %s stopped: %s: %w", s.name, why, sandbox.ErrStopped)
	}
	return fmt.Errorf("sandbox %s stopped: phase %s %s: %w", s.name, pod.Status.Phase, pod.Status.Reason, sandbox.ErrStopped)
}
