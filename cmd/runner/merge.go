package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/runner-dev/runner/internal/cli"
	runreport "github.com/runner-dev/runner/internal/report"
	"github.com/runner-dev/runner/tasks"
)

// mergeOptions are the flags of `runner merge`.
type mergeOptions struct {
	out     string
	inputs  []string
	partial bool
}

const mergeLong = `Merge the out directories of the shards of a run (runner run --shard I/N)
into one, which runner report and runner show read as if one run had done
it all: results.jsonl (each shard's lines, shard by shard), the
trajectories, and a run record whose queue is the whole queue.

Every directory must hold a shard of the same queue split the same N ways,
each shard once. A task with results in two shards is taken once when they
are the same and refused when they differ. When shards are missing, merge
names them and stops, unless --partial: then the tasks of the missing
shards show as not run.

The shards' directories are only read. OUT is written anew (a directory
that merge wrote before is replaced; any other must be empty or absent),
and merging the same shards again writes the same bytes. OUT records the
merge in merge.json, and runner run and runner continue refuse to write
there: continue a task in its shard's directory, then merge again.`

func newMergeCmd(d *deps, runF func(context.Context, *mergeOptions) error) *cobra.Command {
	opts := &mergeOptions{}
	cmd := &cobra.Command{
		Use:     "merge --out MERGED OUT...",
		Short:   "Merge the out directories of a sharded run into one, for the report",
		Long:    mergeLong,
		Example: "  runner merge --out runs/all runs/shard-0 runs/shard-1 runs/shard-2\n  runner report runs/all",
		Args:    cobra.MinimumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			if err := d.jsonUnsupported(cmd); err != nil {
				return err
			}
			if opts.out == "" {
				return cli.Usagef("--out: name the directory to merge into")
			}
			opts.inputs = args
			if runF != nil {
				return runF(cmd.Context(), opts)
			}
			return mergeShards(cmd.Context(), d, opts)
		},
	}
	f := cmd.Flags()
	f.StringVarP(&opts.out, "out", "o", "", "the `directory` to merge into (required)")
	f.BoolVar(&opts.partial, "partial", false, "merge even when shards are missing; their tasks show as not run")
	return cmd
}

// shardDir is one input of a merge: a shard's out directory as read.
type shardDir struct {
	dir  string // as given
	abs  string
	rec  tasks.ShardRecord
	meta *runreport.Meta
}

// mergeRecord is the content of merge.json.
type mergeRecord struct {
	Count       int           `json:"count"`
	QueueDigest string        `json:"queue_digest"`
	Shards      []mergedShard `json:"shards"`
	// Missing lists the shards a --partial merge went without.
	Missing []string `json:"missing,omitempty"`
}

type mergedShard struct {
	Shard string `json:"shard"`
	Dir   string `json:"dir"`
	RunID string `json:"run_id,omitempty"`
}

func mergeShards(ctx context.Context, d *deps, opts *mergeOptions) error {
	if err := checkMergeOut(opts.out); err != nil {
		return err
	}
	shards, err := readShardDirs(opts)
	if err != nil {
		return err
	}
	n := shards[0].rec.Count
	var missing []string
	have := map[int]bool{}
	for _, s := range shards {
		have[s.rec.Index] = true
	}
	for i := range n {
		if !have[i] {
			missing = append(missing, fmt.Sprintf("%d/%d", i, n))
		}
	}
	if len(missing) > 0 && !opts.partial {
		return cli.Usagef("%s of %d missing: %s; name every shard's out directory, or pass --partial to merge without %s",
			plural(len(missing), "shard"), n, strings.Join(missing, ", "), pluralWord(len(missing), "it"))
	}
	slices.SortFunc(shards, func(a, b shardDir) int { return a.rec.Index - b.rec.Index })

	results, nResults, err := mergeResults(shards)
	if err != nil {
		return err
	}
	trajectories, err := mergeTrajectories(shards)
	if err != nil {
		return err
	}
	files := map[string][]byte{tasks.ResultsFile: results}
	for name, data := range trajectories {
		files[filepath.Join("trajectories", name)] = data
	}
	rec := mergeRecord{Count: n, QueueDigest: shards[0].rec.QueueDigest, Missing: missing}
	for _, s := range shards {
		m := mergedShard{Shard: s.rec.Shard(), Dir: s.abs}
		if s.meta != nil {
			m.RunID = s.meta.RunID
		}
		rec.Shards = append(rec.Shards, m)
	}
	data, err := json.MarshalIndent(rec, "", "  ")
	if err != nil {
		return err
	}
	files[tasks.MergeFile] = append(data, '\n')
	if files[runreport.MetaFile], err = mergedMeta(shards); err != nil {
		return err
	}
	if err := replaceDir(opts.out, files); err != nil {
		return err
	}
	for _, s := range shards {
		if s.meta == nil || s.meta.FinishedAt.IsZero() {
			d.printer.Warn("shard %s (%s) has no finished run: its run was interrupted or still goes on; merge again once it is over",
				s.rec.Shard(), s.dir)
		}
	}
	names := make([]string, len(shards))
	for i, s := range shards {
		names[i] = s.rec.Shard()
	}
	d.printer.Success("merged %s (%s; %s, %s) into %s", plural(len(shards), "shard"), strings.Join(names, ", "),
		plural(nResults, "result"), plural(len(trajectories), "trajectory"), opts.out)
	if len(missing) > 0 {
		d.printer.Warn("without %s: %s", plural(len(missing), "shard"), strings.Join(missing, ", "))
	}
	d.printer.Line("report: runner report %s", opts.out)
	return nil
}

// readShardDirs reads the shard record and run record of each input and
// checks that they are shards of one queue split one way, each once, and
// that the output is none of them.
func readShardDirs(opts *mergeOptions) ([]shardDir, error) {
	outAbs, err := filepath.Abs(opts.out)
	if err != nil {
		return nil, err
	}
	var shards []shardDir
	for _, dir := range opts.inputs {
		abs, err := filepath.Abs(dir)
		if err != nil {
			return nil, err
		}
		if within(outAbs, abs) || within(abs, outAbs) {
			return nil, cli.Usagef("--out %s: cannot merge into %s, or in or around a shard's out directory", opts.out, dir)
		}
		if st, err := os.Stat(dir); err != nil || !st.IsDir() {
			return nil, cli.Usagef("%s: not an out directory", dir)
		}
		rec, err := tasks.ReadShardRecord(dir)
		if err != nil {
			return nil, cli.Usagef("%s: %v", dir, err)
		}
		if rec == nil {
			return nil, cli.Usagef("%s has no %s: it is not the out directory of runner run --shard", dir, tasks.ShardFile)
		}
		meta, err := runreport.ReadMeta(dir)
		if err != nil {
			return nil, cli.Usagef("%s: %v", dir, err)
		}
		s := shardDir{dir: dir, abs: abs, rec: *rec, meta: meta}
		for _, o := range shards {
			switch {
			case o.abs == abs:
				return nil, cli.Usagef("%s is named twice", dir)
			case o.rec.Count != rec.Count:
				return nil, cli.Usagef("%s holds shard %s and %s shard %s: the queue was split %d ways in one and %d in the other",
					o.dir, o.rec.Shard(), dir, rec.Shard(), o.rec.Count, rec.Count)
			case o.rec.QueueDigest != rec.QueueDigest:
				return nil, cli.Usagef("%s (shard %s) and %s (shard %s) ran different queues: their tasks differ; run every shard on the same task file",
					o.dir, o.rec.Shard(), dir, rec.Shard())
			case o.rec.Index == rec.Index:
				return nil, cli.Usagef("%s and %s both hold shard %s", o.dir, dir, rec.Shard())
			}
		}
		shards = append(shards, s)
	}
	return shards, nil
}

// within tells whether path is dir or lies below it.
func within(path, dir string) bool {
	rel, err := filepath.Rel(dir, path)
	return err == nil && (rel == "." || (rel != ".." && !strings.HasPrefix(rel, ".."+string(filepath.Separator))))
}

// mergeResults joins the complete lines of the shards' results.jsonl, shard
// by shard, each in its file's order, as they are. A task with lines in
// two shards is taken once if its lines are the same, and refused if not.
func mergeResults(shards []shardDir) (merged []byte, lines int, err error) {
	type line struct {
		id   string
		text []byte
	}
	type owner struct {
		shard int
		lines [][]byte
	}
	files := make([][]line, len(shards))
	byID := map[string]*owner{}
	for i, s := range shards {
		path := filepath.Join(s.dir, tasks.ResultsFile)
		data, err := os.ReadFile(path)
		if err != nil && !errors.Is(err, fs.ErrNotExist) {
			return nil, 0, fmt.Errorf("read results: %w", err)
		}
		if k := bytes.LastIndexByte(data, '\n'); k+1 < len(data) {
			data = data[:k+1] // a line still being written is left out
		}
		mine := map[string][][]byte{}
		for n, text := range bytes.SplitAfter(data, []byte("\n")) {
			if len(bytes.TrimSpace(text)) == 0 {
				continue
			}
			var r struct {
				ID string `json:"id"`
			}
			if err := json.Unmarshal(text, &r); err != nil || tasks.CheckID(r.ID) != nil {
				return nil, 0, cli.Usagef("%s:%d cannot be read; repair or remove the line, then merge again", path, n+1)
			}
			files[i] = append(files[i], line{r.ID, text})
			mine[r.ID] = append(mine[r.ID], text)
		}
		for _, l := range files[i] {
			prev, ok := byID[l.id]
			switch {
			case !ok:
				byID[l.id] = &owner{i, mine[l.id]}
			case prev.shard == i:
			case !slices.EqualFunc(prev.lines, mine[l.id], bytes.Equal):
				return nil, 0, cli.Usagef("task %q has results in both %s and %s, and they differ; merge one of them only",
					l.id, shards[prev.shard].dir, s.dir)
			}
		}
	}
	var buf bytes.Buffer
	for i := range shards {
		for _, l := range files[i] {
			if byID[l.id].shard == i {
				buf.Write(l.text)
				lines++
			}
		}
	}
	return buf.Bytes(), lines, nil
}

// mergeTrajectories reads the trajectories of the shards, by file name;
// the same name in two shards must hold the same bytes.
func mergeTrajectories(shards []shardDir) (map[string][]byte, error) {
	out := map[string][]byte{}
	from := map[string]string{}
	for _, s := range shards {
		dir := filepath.Join(s.dir, "trajectories")
		entries, err := os.ReadDir(dir)
		if errors.Is(err, fs.ErrNotExist) {
			continue
		}
		if err != nil {
			return nil, fmt.Errorf("read trajectories: %w", err)
		}
		for _, e := range entries {
			name := e.Name()
			if !e.Type().IsRegular() || strings.HasPrefix(name, ".") || !strings.HasSuffix(name, ".jsonl") {
				continue
			}
			data, err := os.ReadFile(filepath.Join(dir, name))
			if err != nil {
				return nil, fmt.Errorf("read trajectory: %w", err)
			}
			if prev, ok := out[name]; ok {
				if !bytes.Equal(prev, data) {
					return nil, cli.Usagef("trajectory %s is in both %s and %s, and they differ; merge one of them only",
						name, from[name], s.dir)
				}
				continue
			}
			out[name], from[name] = data, s.dir
		}
	}
	return out, nil
}

// mergedMeta is the run record of the merge: the whole queue, from the
// earliest start to the latest end (none if a shard has not ended), the
// shards' concurrencies added up, and their run budgets too when every
// shard had one (else none).
func mergedMeta(shards []shardDir) ([]byte, error) {
	m := runreport.Meta{RunID: fmt.Sprintf("merge of %d/%d shards", len(shards), shards[0].rec.Count),
		Queue: shards[0].rec.Queue}
	finished, capped := true, true
	for _, s := range shards {
		if s.meta == nil {
			finished, capped = false, false
			continue
		}
		if m.StartedAt.IsZero() || s.meta.StartedAt.Before(m.StartedAt) {
			m.StartedAt = s.meta.StartedAt
		}
		if s.meta.FinishedAt.IsZero() {
			finished = false
		} else if s.meta.FinishedAt.After(m.FinishedAt) {
			m.FinishedAt = s.meta.FinishedAt
		}
		m.Concurrency += s.meta.Concurrency
		m.RunBudgetUSD += s.meta.RunBudgetUSD
		capped = capped && s.meta.RunBudgetUSD > 0
	}
	if !finished {
		m.FinishedAt = time.Time{}
	}
	if !capped { // a shard without a cap: the whole has none
		m.RunBudgetUSD = 0
	}
	return runreport.MarshalMeta(m)
}

// replaceDir makes dir hold exactly files (paths relative to it): built
// beside it, then swapped in. dir must be absent, empty, or an earlier
// merge's output.
func replaceDir(dir string, files map[string][]byte) error {
	if err := checkMergeOut(dir); err != nil {
		return err
	}
	clean := filepath.Clean(dir)
	parent := filepath.Dir(clean)
	if err := os.MkdirAll(parent, 0o755); err != nil {
		return fmt.Errorf("merge: %w", err)
	}
	tmp, err := os.MkdirTemp(parent, "."+filepath.Base(clean)+".merge-")
	if err != nil {
		return fmt.Errorf("merge: %w", err)
	}
	defer os.RemoveAll(tmp)
	if err := os.Chmod(tmp, 0o755); err != nil {
		return fmt.Errorf("merge: %w", err)
	}
	if err := os.MkdirAll(filepath.Join(tmp, "trajectories"), 0o755); err != nil {
		return fmt.Errorf("merge: %w", err)
	}
	for name, data := range files {
		if err := os.WriteFile(filepath.Join(tmp, name), data, 0o644); err != nil {
			return fmt.Errorf("merge: %w", err)
		}
	}
	old := tmp + ".old"
	if err := os.Rename(clean, old); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return fmt.Errorf("merge: %w", err)
	}
	if err := os.Rename(tmp, clean); err != nil {
		os.Rename(old, clean)
		return fmt.Errorf("merge: %w", err)
	}
	return os.RemoveAll(old)
}

// checkMergeOut refuses an output directory that holds anything but an
// earlier merge.
func checkMergeOut(dir string) error {
	entries, err := os.ReadDir(dir)
	switch {
	case errors.Is(err, fs.ErrNotExist):
	case err != nil:
		return cli.Usagef("--out %s: %v", dir, err)
	case len(entries) > 0 && !mergedBefore(dir):
		return cli.Usagef("--out %s is not empty and was not written by runner merge; choose a new or empty directory", dir)
	}
	return nil
}

// mergedBefore tells whether dir holds a merge's record.
func mergedBefore(dir string) bool {
	st, err := os.Stat(filepath.Join(dir, tasks.MergeFile))
	return err == nil && st.Mode().IsRegular()
}
