package main

import (
	"context"

	"github.com/runner-dev/runner/sandbox"
	"github.com/runner-dev/runner/tasks"
)

// removeEarlierRuns removes the sandboxes that earlier runs on this out
// directory left behind (a second Ctrl-C, SIGKILL, a crash): the store
// holds the out directory's lock, so those runs are over whatever their
// containers' owner labels say (an owner on another host, or in another
// PID namespace, looks alive to Backend.Cleanup until its deadline).
func removeEarlierRuns(ctx context.Context, d *deps, e sandbox.Backend, store *tasks.Store) {
	ids, err := store.EarlierRuns()
	if err != nil {
		d.printer.Warn("%v", err)
		return
	}
	removed := 0
	for _, id := range ids {
		rep, err := e.RemoveRun(ctx, id)
		removed += len(rep.Removed)
		if err != nil {
			d.printer.Warn("removing the sandboxes of the earlier run %s: %v", id, err)
			continue
		}
		if err := store.EndRun(id); err != nil {
			d.printer.Warn("%v", err)
		}
	}
	if removed > 0 {
		d.printer.Line("removed %d sandbox container(s) left by an earlier run on %s", removed, store.Dir())
	}
}

// noteLeftovers makes a second Ctrl-C, which exits at once without removing
// the run's sandboxes, say how to remove them.
func noteLeftovers(ctx context.Context, d *deps, out string) {
	onForcedExit(ctx, func() {
		d.printer.Warn("interrupted again: the sandbox containers of this run may still be running; remove them with `runner cleanup`, or run again with --out %s, which removes them first", out)
	})
}
