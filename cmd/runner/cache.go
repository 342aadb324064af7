package main

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/runner-dev/runner/internal/cli"
	"github.com/runner-dev/runner/sandbox"
	"github.com/runner-dev/runner/tasks"
)

// environments is the backend's setup phase, or nil when it has none.
func environments(b sandbox.Backend) sandbox.Environments {
	envs, _ := b.(sandbox.Environments)
	return envs
}

// parseCacheSize reads --env-cache-size: a size like 20g, or off (-1).
func parseCacheSize(s string) (int64, error) {
	if s == "" {
		return 0, nil // commands without the flag: sandbox.DefaultCacheLimit
	}
	if strings.EqualFold(strings.TrimSpace(s), "off") {
		return -1, nil
	}
	n, err := tasks.ParseMemory(s)
	if err != nil || n <= 0 {
		return 0, cli.Usagef("--env-cache-size %q: want a size like 20g, or off", s)
	}
	return n, nil
}

// setupSecrets checks that the host variables the task's setup_env names
// are set, and hands their values to add, to be hidden everywhere.
func setupSecrets(t tasks.Task, getenv func(string) string, add func(where, value, advice string)) []string {
	var problems []string
	for name, host := range t.Setup.HostEnv {
		where := fmt.Sprintf("task %q: setup_env.%s", t.ID, name)
		if t.Source.File != "" {
			where = fmt.Sprintf("%s:%d: %s", t.Source.File, t.Source.Line, where)
		}
		v := getenv(host)
		if v == "" {
			problems = append(problems, fmt.Sprintf("%s: the host variable %s is not set", where, host))
			continue
		}
		add(where+" (${"+host+"})", v, "")
	}
	return problems
}

func newCacheCmd(d *deps) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "cache",
		Short: "List or prune the cache of prepared environments (setup)",
		Long: `A task's setup runs once per key (the image, the setup commands, the names
of setup_env and the content of the cache_key files); its result is kept as an
image in the engine and reused by later tasks with the same key. A run keeps
the cache under --env-cache-size, least recently used first out.

  runner cache ls              list the environments, most recently used first
  runner cache prune           remove them all (one a running task uses stays)
  runner cache prune --keep 5g remove the least recently used beyond 5g`,
		Args: cobra.NoArgs,
	}
	cmd.PersistentFlags().StringVar(&d.backend.kind, "backend", "", "sandbox `backend`: docker only (the kubernetes backend prepares no environments)")
	ls := &cobra.Command{
		Use: "ls", Short: "List the cached environments", Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return withCache(cmd.Context(), d, func(c sandbox.EnvironmentCache) error {
				list, err := c.Environments(cmd.Context())
				if err != nil {
					return err
				}
				return printCache(d, list, "")
			})
		},
	}
	var keep string
	prune := &cobra.Command{
		Use: "prune", Short: "Remove cached environments, least recently used first", Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			var limit int64
			if keep != "" {
				n, err := tasks.ParseMemory(keep)
				if err != nil || n <= 0 {
					return cli.Usagef("--keep %q: want a size like 5g", keep)
				}
				limit = n
			}
			return withCache(cmd.Context(), d, func(c sandbox.EnvironmentCache) error {
				removed, err := c.PruneEnvironments(cmd.Context(), limit)
				if perr := printCache(d, removed, "removed "); perr != nil {
					return perr
				}
				return err
			})
		},
	}
	prune.Flags().StringVar(&keep, "keep", "", "keep the most recently used environments up to this size (default: remove all)")
	cmd.AddCommand(ls, prune)
	return cmd
}

// withCache runs f on the backend's environment cache.
func withCache(ctx context.Context, d *deps, f func(sandbox.EnvironmentCache) error) error {
	if err := d.backend.dockerOnly("runner cache", "the kubernetes backend prepares no environments (setup), so it has no cache"); err != nil {
		return err
	}
	e, err := d.engine(ctx)
	if err != nil {
		return err
	}
	defer e.Close()
	c, ok := e.(sandbox.EnvironmentCache)
	if !ok {
		return errors.New("the sandbox backend keeps no environment cache")
	}
	return f(c)
}

func printCache(d *deps, list []sandbox.CacheEntry, verb string) error {
	if d.globals.json {
		if list == nil {
			list = []sandbox.CacheEntry{}
		}
		return d.printer.JSON(list)
	}
	if len(list) == 0 {
		d.printer.Line("%sno environments", verb)
		return nil
	}
	var total int64
	for _, e := range list {
		total += e.Size
		use := ""
		if e.InUse {
			use = "  (in use)"
		}
		d.printer.Line("%s%s  %8s  last used %s%s", verb, e.Key[:min(16, len(e.Key))], humanBytes(e.Size), e.Used.Local().Format(time.DateTime), use)
	}
	d.printer.Line("%d environment(s), %s", len(list), humanBytes(total))
	return nil
}

func humanBytes(n int64) string {
	switch {
	case n >= 1<<30:
		return fmt.Sprintf("%.1f GiB", float64(n)/(1<<30))
	case n >= 1<<20:
		return fmt.Sprintf("%.1f MiB", float64(n)/(1<<20))
	}
	return fmt.Sprintf("%d KiB", n>>10)
}

// tasksWithSetup counts the tasks that have setup commands.
func tasksWithSetup(queue []tasks.Task) int {
	n := 0
	for _, t := range queue {
		if len(t.Setup.Commands) > 0 {
			n++
		}
	}
	return n
}
