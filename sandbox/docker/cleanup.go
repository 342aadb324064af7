package docker

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	cerrdefs "github.com/containerd/errdefs"
	"github.com/moby/moby/client"

	"github.com/runner-dev/runner/sandbox"
)

// Cleanup removes the sandbox containers of runs that are over, by the
// rules of sandbox.Leftover.Reason; see sandbox.Backend.
func (e *Engine) Cleanup(ctx context.Context, dryRun bool) (sandbox.CleanupReport, error) {
	now := time.Now()
	why := func(l sandbox.Leftover) string { return l.Reason(now) }
	rep, err := e.removeWhere(ctx, nil, dryRun, why)
	if dryRun {
		return rep, err
	}
	return rep, errors.Join(err, e.removeEgressNetworks(ctx, nil, why))
}

// RemoveRun removes every sandbox container of run runID, whatever its
// state: the runner's own last line of defence on shutdown.
func (e *Engine) RemoveRun(ctx context.Context, runID string) (sandbox.CleanupReport, error) {
	why := func(sandbox.Leftover) string { return "run " + runID + " ended" }
	rep, err := e.removeWhere(ctx, []string{LabelRun + "=" + runID}, false, why)
	return rep, errors.Join(err, e.removeEgressNetworks(ctx, []string{LabelRun + "=" + runID}, why))
}

// List returns runner's sandbox containers (of every run).
func (e *Engine) List(ctx context.Context) ([]sandbox.Leftover, error) {
	var out []sandbox.Leftover
	_, err := e.removeWhere(ctx, nil, true, func(l sandbox.Leftover) string {
		out = append(out, l)
		return ""
	})
	return out, err
}

// removeWhere removes runner's containers (narrowed by extra label
// filters) for which why returns a reason, and reports the others as kept.
// A container whose labels cannot be read has a zero Deadline. With dryRun
// nothing is removed.
func (e *Engine) removeWhere(ctx context.Context, labels []string, dryRun bool, why func(sandbox.Leftover) string) (sandbox.CleanupReport, error) {
	f := make(client.Filters).Add("label", append([]string{LabelTool + "=" + toolName}, labels...)...)
	list, err := e.cli.ContainerList(ctx, client.ContainerListOptions{All: true, Filters: f})
	if err != nil {
		return sandbox.CleanupReport{}, e.explain("list sandboxes", "", err)
	}
	var rep sandbox.CleanupReport
	var errs []string
	for _, c := range list.Items {
		owner, deadline, ok := ownerFromLabels(c.Labels)
		l := sandbox.Leftover{
			ID: c.ID, Run: c.Labels[LabelRun], Task: c.Labels[LabelTask],
			Owner: owner, Deadline: deadline, State: string(c.State),
		}
		if len(c.Names) > 0 {
			l.Name = strings.TrimPrefix(c.Names[0], "/")
		}
		if !ok {
			l.Deadline = time.Time{}
		}
		l.Why = why(l)
		if l.Why == "" {
			rep.Kept = append(rep.Kept, l)
			continue
		}
		if dryRun {
			rep.Removed = append(rep.Removed, l)
			continue
		}
		_, err := e.cli.ContainerRemove(ctx, c.ID, client.ContainerRemoveOptions{Force: true, RemoveVolumes: true})
		if err != nil && !cerrdefs.IsNotFound(err) {
			errs = append(errs, fmt.Sprintf("%s: %v", l.Name, err))
			continue
		}
		rep.Removed = append(rep.Removed, l)
	}
	if len(errs) > 0 {
		return rep, fmt.Errorf("remove sandboxes: %s", strings.Join(errs, "; "))
	}
	return rep, nil
}
