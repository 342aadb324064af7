package main

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/runner-dev/runner/internal/cli"
	"github.com/runner-dev/runner/internal/redact"
	"github.com/runner-dev/runner/tasks"
)

type validateOptions struct {
	printer  *cli.Printer
	json     bool
	files    []string
	endpoint endpointCheck
	// shard, when set (--shard), is the shard whose tasks validate lists.
	shard *shard
	// backend is --backend: the files are checked for it, as are those
	// whose defaults name a backend.
	backend string
}

func newValidateCmd(d *deps, runF func(context.Context, *validateOptions) error) *cobra.Command {
	opts := &validateOptions{}
	var shardFlag string
	cmd := &cobra.Command{
		Use:   "validate FILE...",
		Short: "Check task files, listing every mistake with its file and line",
		Long: `Load each task file as a run would and list every problem found, one per
line, as FILE:LINE:COL: task "ID": MESSAGE. When every file is valid, print a
one-line summary of each: its tasks, repositories, and the model, image,
budget and timeout they use ("run default" when the file leaves a value to
the run's configuration).

Each local repository that exists on this machine is checked as a run
would use it: it has commits, each task's ref names a commit (a ref that is
both a branch and a tag is a warning saying which is taken), and each
task's branch is not checked out in any worktree and has no ref in its way
(agent/a where agent is a branch). Repositories given by URL are not
contacted.

Exit code 2 when any file has a problem. With --json, print one JSON
document: {"ok": BOOL, "files": [{"file", "ok", "format", "backend", "tasks", "problems", "warnings"}]}.

With --check-endpoint, also ask the model endpoint (--base-url, else
$OPENAI_BASE_URL, else OpenAI) whether it answers and takes the key, as
runner run does before it starts anything: the one check that needs the
network, so it is off by default. Its result is "endpoint" in --json.

With --shard I/N, also list the tasks of each file that shard I of N
takes in runner run --shard (its "shard" in --json), and check that the
split keeps together tasks that depend on each other.`,
		Example: "  runner validate tasks.yaml\n  runner validate --json queue.jsonl more.yaml",
		Args:    cobra.MinimumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			opts.printer, opts.json, opts.files = d.printer, d.globals.json, args
			opts.endpoint.complete(cmd.Context(), d.getenv)
			if err := (&backendFlags{kind: opts.backend}).check(); err != nil {
				return err
			}
			if cmd.Flags().Changed("shard") {
				s, err := parseShard(shardFlag, d.getenv)
				if err != nil {
					return err
				}
				opts.shard = &s
			}
			if runF != nil {
				return runF(cmd.Context(), opts)
			}
			return runValidate(cmd.Context(), opts)
		},
	}
	opts.endpoint.register(cmd)
	cmd.Flags().StringVar(&shardFlag, "shard", "", "list the tasks that shard `I/N` of runner run --shard takes; auto/N takes I from $"+shardIndexEnv)
	cmd.Flags().StringVar(&opts.backend, "backend", "", "check the files for this sandbox `backend`: docker or kubernetes (default: each file's backend:, else docker)")
	return cmd
}

// fileCheck is what validate found in one task file.
type fileCheck struct {
	File     string        `json:"file"`
	OK       bool          `json:"ok"`
	Format   tasks.Format  `json:"format,omitempty"`
	Tasks    []taskView    `json:"tasks,omitempty"`
	Problems []problemView `json:"problems,omitempty"`
	Warnings []problemView `json:"warnings,omitempty"`
	// Shard lists the tasks the shard of --shard takes.
	Shard *shardView `json:"shard,omitempty"`
	// Backend is the sandbox backend the file runs on.
	Backend string `json:"backend,omitempty"`
	queue   *tasks.Queue
}

// shardView is what a shard takes of a file's queue.
type shardView struct {
	Shard string   `json:"shard"`
	Tasks []string `json:"tasks"`
}

// taskView is a task as --json shows it: what a run will do with it.
type taskView struct {
	ID            string   `json:"id"`
	Line          int      `json:"line"`
	Repo          string   `json:"repo"`
	Ref           string   `json:"ref,omitempty"`
	Branch        string   `json:"branch"`
	Model         string   `json:"model,omitempty"`
	Image         string   `json:"image,omitempty"`
	BudgetUSD     float64  `json:"budget_usd,omitempty"`
	MaxSteps      int      `json:"max_steps,omitempty"`
	Timeout       string   `json:"timeout,omitempty"`
	Check         string   `json:"check,omitempty"`
	CheckRetries  int      `json:"check_retries,omitempty"`
	Network       string   `json:"network"`
	Allow         []string `json:"allow,omitempty"` // the egress allowlist of network "allowlist"
	PushOnSuccess bool     `json:"push_on_success"`
}

// problemView is a tasks.Problem as --json shows it.
type problemView struct {
	File    string `json:"file"`
	Line    int    `json:"line,omitempty"`
	Col     int    `json:"col,omitempty"`
	Task    string `json:"task,omitempty"`
	Field   string `json:"field,omitempty"`
	Message string `json:"message"`
	text    string
}

// checkFile loads one task file and reports what it holds or what is wrong
// with it, its local repositories included (see checkRepos). A file that
// cannot be read is one problem.
func checkFile(ctx context.Context, path, backend string) fileCheck {
	fc := fileCheck{File: path}
	q, err := tasks.Load(ctx, path)
	var invalid *tasks.ValidationError
	switch {
	case errors.As(err, &invalid):
		fc.Problems = problemViews(invalid.Problems)
		return fc
	case err != nil:
		fc.Problems = []problemView{{File: path, Message: err.Error(), text: path + ": " + err.Error()}}
		return fc
	}
	repos := checkRepos(q.Tasks, true)
	fc.Warnings = problemViews(repos.warnings)
	b := &backendFlags{kind: backend}
	if err := b.fromQueue(q); err != nil {
		repos.problems = append(repos.problems, tasks.Problem{File: path, Line: q.BackendLine, Field: "backend", Msg: err.Error()})
	} else {
		repos.problems = append(repos.problems, b.refusals(q.Tasks, "")...)
	}
	if len(repos.problems) > 0 {
		fc.Problems = problemViews(repos.problems)
		return fc
	}
	fc.Backend = b.name()
	fc.OK, fc.Format, fc.queue = true, q.Format, q
	for _, t := range q.Tasks {
		v := taskView{
			ID: t.ID, Line: t.Source.Line, Repo: redact.URL(t.Repo), Ref: t.Ref, Branch: t.Branch,
			Model: t.Model, Image: t.Image, BudgetUSD: t.BudgetUSD, MaxSteps: t.MaxSteps,
			Check: t.Check, CheckRetries: t.CheckRetries, Network: string(t.Network), Allow: t.Allow, PushOnSuccess: t.ShouldPush(true),
		}
		if t.Timeout > 0 {
			v.Timeout = shortDuration(t.Timeout)
		}
		fc.Tasks = append(fc.Tasks, v)
	}
	return fc
}

// checkShard lists the tasks of a valid file that shard s takes, or makes
// the file invalid when the split separates tasks that depend on each
// other.
func checkShard(c *fileCheck, s shard) {
	if err := checkShardable(c.queue.Tasks, s.Count); err != nil {
		c.OK = false
		c.Problems = []problemView{{File: c.File, Message: err.Error(), text: c.File + ": " + err.Error()}}
		return
	}
	c.Shard = &shardView{Shard: s.String(), Tasks: []string{}}
	for _, t := range s.take(c.queue.Tasks) {
		c.Shard.Tasks = append(c.Shard.Tasks, t.ID)
	}
}

// problemViews turns problems into their --json form.
func problemViews(ps []tasks.Problem) []problemView {
	var out []problemView
	for _, p := range ps {
		out = append(out, problemView{
			File: p.File, Line: p.Line, Col: p.Col, Task: p.TaskID, Field: p.Field, Message: p.Msg, text: p.String(),
		})
	}
	return out
}

func runValidate(ctx context.Context, opts *validateOptions) error {
	checks := make([]fileCheck, len(opts.files))
	bad, problems := 0, 0
	for i, f := range opts.files {
		checks[i] = checkFile(ctx, f, opts.backend)
		if ctx.Err() != nil {
			return context.Cause(ctx)
		}
		if checks[i].OK && opts.shard != nil {
			checkShard(&checks[i], *opts.shard)
		}
		if !checks[i].OK {
			bad++
			problems += len(checks[i].Problems)
		}
	}
	var endpoint *endpointResult
	if bad == 0 {
		endpoint = opts.endpoint.run()
	}
	if opts.json {
		if err := opts.printer.JSON(struct {
			OK       bool            `json:"ok"`
			Files    []fileCheck     `json:"files"`
			Endpoint *endpointResult `json:"endpoint,omitempty"`
		}{bad == 0 && endpoint.ok(), checks, endpoint}); err != nil {
			return err
		}
	} else {
		for _, c := range checks {
			for _, w := range c.Warnings {
				opts.printer.Warn("%s", w.text)
			}
			if c.OK {
				summary := queueSummary(c.queue)
				if c.Backend != tasks.BackendDocker {
					summary += "; backend " + c.Backend
				}
				opts.printer.Success("%s: %s", c.File, summary)
				if c.Shard != nil {
					ids := strings.Join(c.Shard.Tasks, ", ")
					if ids == "" {
						ids = "none"
					}
					opts.printer.Line("  shard %s takes %d of %s: %s", c.Shard.Shard, len(c.Shard.Tasks),
						plural(len(c.queue.Tasks), "task"), ids)
				}
				continue
			}
			for _, p := range c.Problems {
				opts.printer.Problem("%s", p.text)
			}
		}
	}
	if bad > 0 {
		return &cli.ExitError{Code: cli.ExitUsage, Err: fmt.Errorf("%s in %d of %d task %s",
			plural(problems, "problem"), bad, len(checks), pluralWord(len(checks), "file"))}
	}
	return endpoint.report(opts.printer, opts.json)
}

// queueSummary describes a valid queue in one line: its tasks, its repositories,
// and the settings they use, "run default" standing for a value the file
// leaves to the run's configuration.
func queueSummary(q *tasks.Queue) string {
	var repos, models, images, budgets, timeouts []string
	for _, t := range q.Tasks {
		repos = append(repos, redact.URL(t.Repo))
		models = append(models, t.Model)
		if t.Build != nil {
			images = append(images, t.Build.String())
		} else {
			images = append(images, t.Image)
		}
		b := ""
		if t.BudgetUSD > 0 {
			b = fmt.Sprintf("$%.2f", t.BudgetUSD)
		}
		budgets = append(budgets, b)
		d := ""
		if t.Timeout > 0 {
			d = shortDuration(t.Timeout)
		}
		timeouts = append(timeouts, d)
	}
	parts := []string{plural(len(q.Tasks), "task") + " (" + string(q.Format) + ")"}
	if r := distinct(repos); len(r) == 1 {
		parts = append(parts, "repo "+r[0])
	} else {
		parts = append(parts, plural(len(r), "repo"))
	}
	parts = append(parts,
		setting("model", models), setting("image", images),
		setting("budget", budgets), setting("timeout", timeouts))
	if n := tasksWithSetup(q.Tasks); n > 0 {
		parts = append(parts, "setup on "+plural(n, "task"))
	}
	return strings.Join(parts, "; ")
}

// shortDuration writes d as Go does, without the zero units at its end:
// "30m" for 30m0s, "1h" for 1h0m0s. ParseDuration reads it back.
func shortDuration(d time.Duration) string {
	s := d.String()
	if strings.HasSuffix(s, "m0s") {
		s = strings.TrimSuffix(s, "0s")
	}
	if strings.HasSuffix(s, "h0m") {
		s = strings.TrimSuffix(s, "0m")
	}
	return s
}

// setting names the distinct values of one setting across a queue, at most
// three and a count of the others, the empty value shown as "run default".
func setting(name string, values []string) string {
	vs := distinct(values)
	for i, v := range vs {
		if v == "" {
			vs[i] = "run default"
		}
	}
	if n := len(vs); n > 3 {
		vs = append(vs[:3], fmt.Sprintf("%d more", n-3))
	}
	return pluralWord(len(vs), name) + " " + strings.Join(vs, ", ")
}

// distinct returns the values in order of first appearance, without repeats.
func distinct(values []string) []string {
	var out []string
	for _, v := range values {
		if !slices.Contains(out, v) {
			out = append(out, v)
		}
	}
	return out
}

// plural writes a count and a noun that agrees with it: "1 task", "3 tasks".
func plural(n int, noun string) string {
	return fmt.Sprintf("%d %s", n, pluralWord(n, noun))
}

func pluralWord(n int, noun string) string {
	switch {
	case n == 1:
		return noun
	case strings.HasSuffix(noun, "ch"), strings.HasSuffix(noun, "s"):
		return noun + "es"
	}
	return noun + "s"
}
