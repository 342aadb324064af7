package main

import (
	"context"
	"fmt"
	"slices"
	"strings"

	"github.com/runner-dev/runner/internal/batch"
	"github.com/runner-dev/runner/sandbox"
	"github.com/runner-dev/runner/tasks"
)

// checkRuntimes refuses a queue that asks for an isolation runtime the
// backend does not have, before anything runs, naming the tasks and saying
// how to add it. def is the runtime of tasks that name none.
func checkRuntimes(ctx context.Context, b sandbox.Backend, queue []tasks.Task, def string) error {
	wanted := map[string][]string{} // runtime → task ids
	for _, t := range queue {
		rt := t.Runtime
		if rt == "" {
			rt = def
		}
		if rt != "" {
			wanted[rt] = append(wanted[rt], t.ID)
		}
	}
	if len(wanted) == 0 {
		return nil
	}
	info, err := b.Info(ctx)
	if err != nil {
		return err
	}
	var problems []string
	for rt, ids := range wanted {
		if slices.Contains(info.Runtimes, rt) {
			continue
		}
		problems = append(problems, fmt.Sprintf("runtime %q (task %s): the %s engine at %s has only %s; `runner doctor --runtime %s` says how to add it",
			rt, strings.Join(ids, ", "), info.Kind, info.Address, strings.Join(info.Runtimes, ", "), rt))
	}
	if len(problems) == 0 {
		return nil
	}
	slices.Sort(problems)
	return &batch.ConfigError{Problems: problems}
}
