package main

import (
	"fmt"
	"hash/fnv"
	"os"
	"strconv"
	"strings"
	"time"

	"github.com/runner-dev/runner/internal/cli"
	runreport "github.com/runner-dev/runner/internal/report"
	"github.com/runner-dev/runner/tasks"
)

// shardIndexEnv is the variable a Kubernetes Indexed Job sets to the index
// of each of its pods; --shard auto/N reads it.
const shardIndexEnv = "JOB_COMPLETION_INDEX"

// shardHelp is the help of --shard, shared by run and validate.
const shardHelp = "run only shard `I/N` of the queue (0 <= I < N): the tasks whose id hashes to I; auto/N takes I from $" +
	shardIndexEnv + " (a Kubernetes Indexed Job sets it)"

// shard is one of N parts of a queue. A task belongs to the shard its id
// hashes to, so the split depends on nothing but the ids and N: every
// process of a sharded run computes the same one, whatever the order of
// the queue, and adding a task never moves the others.
type shard struct {
	Index, Count int
}

// String writes the shard as --shard reads it: "1/3".
func (s shard) String() string { return fmt.Sprintf("%d/%d", s.Index, s.Count) }

// maxShards bounds N: beyond it a shard holds too few tasks to be worth a
// process, and a typo (1/30000) is more likely than intent.
const maxShards = 10000

// parseShard reads the value of --shard: "I/N", or "auto/N" with I from
// $JOB_COMPLETION_INDEX. Errors are usage errors naming the flag.
func parseShard(value string, getenv func(string) string) (shard, error) {
	bad := func(format string, a ...any) (shard, error) {
		return shard{}, cli.Usagef("--shard %q: %s", value, fmt.Sprintf(format, a...))
	}
	i, n, ok := strings.Cut(value, "/")
	if !ok {
		return bad("want I/N (for example 0/3), or auto/N to take I from $%s", shardIndexEnv)
	}
	count, err := strconv.Atoi(n)
	if err != nil || count < 1 || count > maxShards {
		return bad("N must be a whole number from 1 to %d", maxShards)
	}
	from := ""
	if i == "auto" {
		i = getenv(shardIndexEnv)
		if i == "" {
			return bad("auto takes the shard's index from $%s, which is not set", shardIndexEnv)
		}
		from = fmt.Sprintf(" ($%s is %q)", shardIndexEnv, i)
	}
	index, err := strconv.Atoi(i)
	if err != nil || index < 0 || index >= count {
		return bad("I must be a whole number from 0 to %d%s", count-1, from)
	}
	return shard{Index: index, Count: count}, nil
}

// shardOf is the shard of N that task id belongs to: FNV-1a of the id,
// modulo N.
func shardOf(id string, n int) int {
	h := fnv.New32a()
	h.Write([]byte(id))
	return int(h.Sum32() % uint32(n))
}

// take returns the tasks of queue that belong to s, in queue order.
func (s shard) take(queue []tasks.Task) []tasks.Task {
	var out []tasks.Task
	for _, t := range queue {
		if shardOf(t.ID, s.Count) == s.Index {
			out = append(out, t)
		}
	}
	return out
}

// checkShardable refuses a split that would separate tasks that depend on
// each other: a task whose ref is the branch another task of the queue
// commits to, in the same repository, starts from that task's work, and
// only a run that holds both can order them. Tasks are otherwise
// independent (branches are checked to be distinct when the file loads).
func checkShardable(queue []tasks.Task, n int) error {
	if n <= 1 {
		return nil
	}
	type key struct{ repo, branch string }
	owner := map[key]tasks.Task{}
	for _, t := range queue {
		owner[key{t.Repo, t.Branch}] = t
	}
	for _, t := range queue {
		ref := strings.TrimPrefix(t.Ref, "refs/heads/")
		if ref == "" {
			continue
		}
		o, ok := owner[key{t.Repo, ref}]
		if !ok || o.ID == t.ID {
			continue
		}
		if a, b := shardOf(t.ID, n), shardOf(o.ID, n); a != b {
			return cli.Usagef("--shard: task %q (%s:%d) starts from branch %q, which task %q (%s:%d) commits to, but %q falls in shard %d/%d and %q in shard %d/%d; run them unsharded, or give %q another ref",
				t.ID, t.Source.File, t.Source.Line, ref, o.ID, o.Source.File, o.Source.Line, t.ID, a, n, o.ID, b, n, t.ID)
		}
	}
	return nil
}

// shardQueue returns the tasks of queue (loaded from file) that the shard
// of opts runs, and sets what the out directory will record of it. A
// shard with no task records itself (so that runner merge knows it ran),
// says so, and returns a nil queue: there is nothing more to do.
func shardQueue(d *deps, opts *runOptions, file string, queue []tasks.Task) ([]tasks.Task, error) {
	s := *opts.shard
	if err := checkShardable(queue, s.Count); err != nil {
		return nil, err
	}
	ids := make([]string, len(queue))
	for i, t := range queue {
		ids[i] = t.ID
	}
	opts.shardRecord = &tasks.ShardRecord{Index: s.Index, Count: s.Count, QueueDigest: tasks.QueueDigest(queue), Queue: ids}
	mine := s.take(queue)
	if len(mine) > 0 {
		if !opts.events && !d.globals.json {
			d.printer.Note("shard %s: %s of the %d in %s", s, plural(len(mine), "task"), len(queue), file)
		}
		return mine, nil
	}
	store, err := tasks.OpenStore(opts.out)
	if err != nil {
		return nil, configErr(err)
	}
	defer store.Close()
	if err := store.ClaimShard(opts.shardRecord); err != nil {
		return nil, configErr(err)
	}
	now := time.Now().UTC()
	meta := runreport.Meta{RunID: fmt.Sprintf("%s-%d", now.Format("20060102-150405"), os.Getpid()), StartedAt: now, FinishedAt: now,
		RunBudgetUSD: opts.runBudget, Concurrency: opts.concurrency, Queue: []string{}}
	if err := runreport.WriteMeta(opts.out, meta); err != nil {
		return nil, err
	}
	d.printer.Success("shard %s: none of the %s in %s falls in this shard; nothing to run", s, plural(len(queue), "task"), file)
	return nil, nil
}
