package kubernetes

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/runner-dev/runner/sandbox"
)

// Cleanup deletes the pods (and network policies) of runs that are over,
// by the rules of sandbox.Leftover.Reason; see sandbox.Backend.
func (b *Backend) Cleanup(ctx context.Context, dryRun bool) (sandbox.CleanupReport, error) {
	now := time.Now()
	return b.removeWhere(ctx, "", dryRun, func(l sandbox.Leftover) string { return l.Reason(now) })
}

// RemoveRun deletes every pod and policy of run runID, whatever its state.
func (b *Backend) RemoveRun(ctx context.Context, runID string) (sandbox.CleanupReport, error) {
	return b.removeWhere(ctx, LabelRun+"="+labelValue(runID), false, func(sandbox.Leftover) string { return "run " + runID + " ended" })
}

// List returns runner's sandbox pods (of every run).
func (b *Backend) List(ctx context.Context) ([]sandbox.Leftover, error) {
	var out []sandbox.Leftover
	_, err := b.removeWhere(ctx, "", true, func(l sandbox.Leftover) string {
		out = append(out, l)
		return ""
	})
	return out, err
}

// removeWhere deletes runner's pods (narrowed by the label selector extra)
// for which why returns a reason, with their policies, and then the
// policies whose pod is gone by the same rules.
func (b *Backend) removeWhere(ctx context.Context, extra string, dryRun bool, why func(sandbox.Leftover) string) (sandbox.CleanupReport, error) {
	sel := LabelTool + "=" + toolName
	if extra != "" {
		sel += "," + extra
	}
	pods, err := b.cs.CoreV1().Pods(b.namespace).List(ctx, metav1.ListOptions{LabelSelector: sel})
	if err != nil {
		return sandbox.CleanupReport{}, b.explain("list sandbox pods", "pods", err)
	}
	var rep sandbox.CleanupReport
	var errs []string
	live := map[string]bool{}
	for _, p := range pods.Items {
		l := leftover(p.ObjectMeta, podState(&p))
		l.Why = why(l)
		if l.Why == "" {
			rep.Kept = append(rep.Kept, l)
			live[p.Name] = true
			continue
		}
		if dryRun {
			rep.Removed = append(rep.Removed, l)
			continue
		}
		if err := b.deletePod(ctx, p.Name); err != nil {
			errs = append(errs, err.Error())
			live[p.Name] = true
			continue
		}
		rep.Removed = append(rep.Removed, l)
	}
	if dryRun {
		return rep, nil
	}
	// A policy goes only once its pod is gone from the node.
	var removed []string
	for _, l := range rep.Removed {
		removed = append(removed, l.Name)
	}
	wctx, cancel := context.WithTimeout(ctx, podGoneTimeout)
	defer cancel()
	if err := b.waitPodsGone(wctx, removed...); err != nil {
		errs = append(errs, err.Error())
		for _, n := range removed {
			live[n] = true
		}
	}
	pols, err := b.cs.NetworkingV1().NetworkPolicies(b.namespace).List(ctx, metav1.ListOptions{LabelSelector: sel})
	if err != nil {
		return rep, errors.Join(joinErrs(errs), b.explain("list network policies", "networkpolicies", err))
	}
	for _, p := range pols.Items {
		// A policy goes with its pod; one whose pod is gone (a Start that
		// died between the two) by the same rules as a stopped pod.
		if live[p.Name] {
			continue
		}
		if !podExists(pods.Items, p.Name) && why(leftover(p.ObjectMeta, "policy")) == "" {
			continue
		}
		err := b.cs.NetworkingV1().NetworkPolicies(b.namespace).Delete(ctx, p.Name, metav1.DeleteOptions{})
		if err != nil && !apierrors.IsNotFound(err) {
			errs = append(errs, fmt.Sprintf("network policy %s: %v", p.Name, b.explain("delete", "networkpolicies", err)))
		}
	}
	return rep, joinErrs(errs)
}

func podExists(pods []corev1.Pod, name string) bool {
	for i := range pods {
		if pods[i].Name == name {
			return true
		}
	}
	return false
}

func joinErrs(errs []string) error {
	if len(errs) == 0 {
		return nil
	}
	return fmt.Errorf("remove sandboxes: %s", strings.Join(errs, "; "))
}

// leftover describes a pod or policy from its metadata; a damaged record
// has a zero Deadline.
func leftover(m metav1.ObjectMeta, state string) sandbox.Leftover {
	owner, deadline, ok := ownerFromMeta(m.Labels, m.Annotations)
	if !ok {
		deadline = time.Time{}
	}
	task := m.Annotations[AnnotationTask]
	if task == "" {
		task = m.Labels[LabelTask]
	}
	run := m.Annotations[AnnotationRun]
	if run == "" {
		run = m.Labels[LabelRun]
	}
	return sandbox.Leftover{
		ID: string(m.UID), Name: m.Name, Run: run, Task: task,
		Owner: owner, Deadline: deadline, State: state,
	}
}

// podState maps a pod's phase to Leftover.State: "running" while its
// processes may run.
func podState(p *corev1.Pod) string {
	switch p.Status.Phase {
	case corev1.PodRunning, corev1.PodPending:
		return sandbox.StateRunning
	}
	return strings.ToLower(string(p.Status.Phase))
}

// deletePod asks for pod name's deletion with the pod's own short grace
// period (TerminationGracePeriodSeconds), so that the node ends its
// processes before the API forgets the pod. A pod already gone is not an
// error.
func (b *Backend) deletePod(ctx context.Context, name string) error {
	err := b.cs.CoreV1().Pods(b.namespace).Delete(ctx, name, metav1.DeleteOptions{})
	if err != nil && !apierrors.IsNotFound(err) {
		return b.explain("delete pod "+name, "pods", err)
	}
	return nil
}

// podGonePoll is how often waitPodsGone asks; podGoneTimeout bounds
// Cleanup's wait for the pods it deleted.
const (
	podGonePoll    = 250 * time.Millisecond
	podGoneTimeout = time.Minute
)

// waitPodsGone waits until none of the named pods exists any more, that is
// until the node has ended their processes, or ctx ends.
func (b *Backend) waitPodsGone(ctx context.Context, names ...string) error {
	for _, name := range names {
		for {
			_, err := b.cs.CoreV1().Pods(b.namespace).Get(ctx, name, metav1.GetOptions{})
			if apierrors.IsNotFound(err) {
				break
			}
			if err != nil && ctx.Err() == nil {
				return b.explain("get pod "+name, "pods", err)
			}
			select {
			case <-ctx.Done():
				return fmt.Errorf("pod %s is still being deleted: %w", name, ctx.Err())
			case <-time.After(podGonePoll):
			}
		}
	}
	return nil
}
