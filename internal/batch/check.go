package batch

import (
	"context"
	"errors"
	"fmt"
	"slices"

	"github.com/runner-dev/runner/sandbox"
)

// execCheck runs the task's check with the workspace set aside: the
// sandbox saves the workspace first (sandbox.Checkpointer) and puts it back
// once the check is over, whatever its outcome, so what the check writes
// (bytecode, caches, reports, a changed tracked file) neither lands on the
// branch nor is seen by the agent if it goes on after a failed check; the
// agent sees the check's output instead. The commit thus records the
// agent's work as it stood when it last called complete. The cost is one
// copy of the workspace each way per check, held in the sandbox's /tmp
// (memory-backed when the disk limit is on) while the check runs.
//
// When the workspace cannot be set aside (a sandbox without checkpoints, a
// file the sandbox user cannot read, no room in /tmp) or the check
// destroys the saved copy, the check runs on the workspace itself and a
// warning says that what it wrote may be on the branch; the exclude list
// still leaves caches out. When putting the workspace back fails half way
// the workspace is not committed (see work.lost).
func (w *work) execCheck(ctx context.Context) (sandbox.ExecResult, error) {
	opt := sandbox.ExecOptions{Timeout: w.task.CheckTimeout, MaxOutput: 16 << 10}
	cp, ok := w.sb.(sandbox.Checkpointer)
	if !ok {
		w.warn("the check ran on the workspace itself (this sandbox cannot set it aside): what the check wrote may be on the branch")
		return w.sb.Exec(ctx, w.task.Check, opt)
	}
	if err := cp.Checkpoint(ctx); err != nil {
		w.warn(fmt.Sprintf("the check ran on the workspace itself (it could not be set aside: %v): what the check wrote may be on the branch", err))
		return w.sb.Exec(ctx, w.task.Check, opt)
	}
	res, err := w.sb.Exec(ctx, w.task.Check, opt)
	// The check may have ended with the task's deadline: putting the
	// workspace back belongs to committing it, and gets the commit's time.
	rctx, cancel := w.commitContext(ctx)
	defer cancel()
	switch rerr := cp.Restore(rctx); {
	case errors.Is(rerr, sandbox.ErrNoCheckpoint):
		w.warn("the check removed the copy of the workspace set aside before it ran: what the check wrote may be on the branch")
	case rerr != nil:
		w.lost = fmt.Errorf("the workspace could not be put back as it was before the check: %w", rerr)
		if err == nil {
			err = w.lost
		}
	}
	return res, err
}

// warn adds a warning to the result once.
func (w *work) warn(msg string) {
	if !slices.Contains(w.res.Warnings, msg) {
		w.res.Warnings = append(w.res.Warnings, msg)
	}
}
