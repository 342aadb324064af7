package main

import (
	"context"
	"errors"
	"fmt"
	"net/url"
	"os"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/spf13/cobra"

	"github.com/runner-dev/runner/agent"
	"github.com/runner-dev/runner/budget"
	"github.com/runner-dev/runner/gitops"
	"github.com/runner-dev/runner/internal/batch"
	"github.com/runner-dev/runner/internal/cli"
	"github.com/runner-dev/runner/internal/provider"
	"github.com/runner-dev/runner/internal/redact"
	"github.com/runner-dev/runner/sandbox"
	"github.com/runner-dev/runner/tasks"
)

// modelFlags choose and configure the model endpoint.
type modelFlags struct {
	name          string
	baseURL       string
	apiKey        string // from the environment only: a flag would show in ps
	apiKeyEnv     string
	priceFile     string
	contextWindow int64
	compactAt     float64
	finalReserve  float64
	noCompaction  bool
	maxTokens     int64
	useMaxTokens  bool
	provider      string
	protocol      string
	timeout       time.Duration
	maxRetries    int
	outageWait    time.Duration
	secretEnv     []string
}

const modelEnvHelp = `
Model endpoint (any OpenAI-compatible Chat Completions API):
  --model, RUNNER_MODEL          model name, unless the task file sets one;
                                 replay:FILE plays back a recorded trajectory
  --base-url, OPENAI_BASE_URL    API base URL (default https://api.openai.com/v1)
  --provider                     the service behind it (auto: from the URL's host)
  OPENAI_API_KEY                 API key (or the variable named by --api-key-env)`

func (m *modelFlags) register(cmd *cobra.Command) {
	f := cmd.Flags()
	f.StringVarP(&m.name, "model", "m", "", "model `name` for tasks that name none (default $RUNNER_MODEL)")
	f.StringVar(&m.baseURL, "base-url", "", "Chat Completions API base `URL` (default $OPENAI_BASE_URL, else OpenAI)")
	f.StringVar(&m.apiKeyEnv, "api-key-env", "OPENAI_API_KEY", "environment `variable` holding the API key")
	f.StringVar(&m.priceFile, "prices", "", "JSON price `file` adding to or overriding the built-in prices")
	f.Int64Var(&m.contextWindow, "context-window", 128000, "the model's context window in tokens")
	f.Float64Var(&m.compactAt, "compact-at", 0.8, "compact the history at this fraction of the context window")
	f.Float64Var(&m.finalReserve, "final-reserve", agent.DefaultFinalReserve,
		"share of the budget kept for the final call; when the rest is spent the agent is told to finish (0: none)")
	f.BoolVar(&m.noCompaction, "no-compaction", false, "never compact the history")
	f.Int64Var(&m.maxTokens, "max-completion-tokens", 8192, "reply limit per model call (lowered to fit the budget)")
	f.StringVar(&m.provider, "provider", string(provider.Auto), "`service` behind the endpoint, for tasks that name none: "+
		strings.Join(provider.Names(), ", ")+" (auto: from the base URL's host, then from the server's refusals)")
	f.StringVar(&m.protocol, "protocol", agent.ProtocolNative, "how tools are offered, for tasks that name none: "+
		strings.Join(tasks.Protocols, ", ")+" (xml: described in the prompt and read from the reply's text; auto: native, xml once the server refuses tools)")
	f.BoolVar(&m.useMaxTokens, "use-max-tokens", false, "send the completion limit as max_tokens only, whatever the provider (servers that know no other field)")
	f.DurationVar(&m.timeout, "request-timeout", agent.DefaultRequestTimeout, "timeout of one model request attempt (retried)")
	f.IntVar(&m.maxRetries, "max-retries", agent.DefaultMaxRetries, "retries of a failed model request, before its task fails or, if the endpoint is unavailable, waits for it")
	f.DurationVar(&m.outageWait, "outage-wait", agent.DefaultOutageWait, "how long tasks wait for a model endpoint that stopped answering before they end as model_error")
	f.StringSliceVar(&m.secretEnv, "secret-env", nil, "environment `variable` whose value is a secret to hide from trajectories, results and commits (repeatable)")
	cmd.Long += "\n" + modelEnvHelp
}

// complete fills in what the environment gives and checks the flags.
func (m *modelFlags) complete(getenv func(string) string) error {
	if m.name == "" {
		m.name = getenv("RUNNER_MODEL")
	}
	if m.baseURL == "" {
		m.baseURL = getenv("OPENAI_BASE_URL")
	}
	m.apiKey = getenv(m.apiKeyEnv)
	if m.compactAt <= 0 || m.compactAt > 1 {
		return cli.Usagef("--compact-at %v: want a fraction in (0, 1]", m.compactAt)
	}
	if m.maxRetries < 0 {
		return cli.Usagef("--max-retries %d: want 0 or more", m.maxRetries)
	}
	if m.outageWait < time.Second {
		return cli.Usagef("--outage-wait %s: want at least 1s", m.outageWait)
	}
	if m.finalReserve < 0 || m.finalReserve > 0.5 {
		return cli.Usagef("--final-reserve %v: want a share in [0, 0.5]", m.finalReserve)
	}
	if m.contextWindow < 1000 {
		return cli.Usagef("--context-window %d: want at least 1000 tokens", m.contextWindow)
	}
	if m.baseURL != "" {
		if u, err := url.Parse(m.baseURL); err != nil || u.Scheme == "" || u.Host == "" {
			return cli.Usagef("--base-url %q: want an http(s) URL such as https://api.openai.com/v1", m.baseURL)
		}
	}
	p, err := provider.Parse(m.provider)
	if err != nil {
		return cli.Usagef("--provider: %v", err)
	}
	m.provider = string(p)
	if !tasks.ValidProtocol(m.protocol) {
		return cli.Usagef("--protocol %q: want one of %s", m.protocol, strings.Join(tasks.Protocols, ", "))
	}
	return nil
}

// prices is the built-in table with the price file's entries on top.
func (m *modelFlags) prices() (budget.PriceTable, error) {
	table := budget.DefaultPrices()
	if m.priceFile == "" {
		return table, nil
	}
	f, err := os.Open(m.priceFile)
	if err != nil {
		return table, &cli.ExitError{Code: cli.ExitUsage, Err: fmt.Errorf("--prices: %w", err)}
	}
	defer f.Close()
	extra, err := budget.ParsePrices(f)
	if err == nil {
		table, err = table.With(extra...)
	}
	if err != nil {
		return table, &cli.ExitError{Code: cli.ExitUsage, Err: fmt.Errorf("--prices %s: %w", m.priceFile, err)}
	}
	return table, nil
}

func (m *modelFlags) agentConfig() agent.Config {
	return agent.Config{
		ContextWindow: m.contextWindow, CompactAt: m.compactAt, NoCompaction: m.noCompaction,
		FinalReserve:        finalReserve(m.finalReserve),
		MaxCompletionTokens: m.maxTokens,
	}
}

// factory makes each task's model: a replay of a recorded trajectory, or
// the endpoint behind the run's gate under the task's provider, with its
// retries and the changes it makes to its request rules recorded in the
// task's trajectory. What one task's model learns from the server's
// refusals holds for every task of the run with the same provider.
func (m *modelFlags) factory(gate *agent.Endpoint) func(tasks.Task, *agent.Trajectory) (agent.Model, error) {
	var mu sync.Mutex
	learned := map[string]*agent.Adaptations{}
	return func(t tasks.Task, traj *agent.Trajectory) (agent.Model, error) {
		if file, ok := strings.CutPrefix(t.Model, "replay:"); ok {
			return agent.LoadReplay(file)
		}
		name := t.Provider
		if name == "" {
			name = m.provider
		}
		mu.Lock()
		if learned[name] == nil {
			learned[name] = &agent.Adaptations{}
		}
		adaptations := learned[name]
		mu.Unlock()
		cfg := m.openAIConfig(gate)
		cfg.Provider, cfg.Adaptations = provider.Name(name), adaptations
		cfg.OnRetry = func(attempt int, err error, wait time.Duration) {
			traj.Record(agent.Event{Type: agent.EventRetry, Attempt: attempt, Error: err.Error(), WaitMS: wait.Milliseconds()})
		}
		cfg.OnAdapt = func(note string) {
			traj.Record(agent.Event{Type: agent.EventAdapt, Text: note})
		}
		model, err := agent.NewOpenAI(cfg)
		if err != nil {
			return nil, err
		}
		return m.withProtocol(model, t, traj)
	}
}

// secrets lists the values nothing runner writes may show: the API key,
// the git tokens, the values of the --secret-env variables and the
// credentials inside the queue's repository URLs. A value too short to be
// hidden (redact.MinSecretLen) is refused, and so is a --secret-env
// variable that is not set: each would leave a secret visible. All
// problems are reported at once, each naming where the value comes from.
func (m *modelFlags) secrets(getenv func(string) string, queue []tasks.Task) ([]string, error) {
	var values, problems []string
	add := func(where, value, advice string) {
		if value == "" {
			return
		}
		if err := redact.CheckSecret(value); err != nil {
			if p := fmt.Sprintf("%s: the value is %v%s", where, err, advice); !slices.Contains(problems, p) {
				problems = append(problems, p)
			}
			return
		}
		values = append(values, value)
	}
	add(m.apiKeyEnv+" (the API key)", m.apiKey, "; unset it if the endpoint needs no key")
	add("RUNNER_GIT_TOKEN", getenv("RUNNER_GIT_TOKEN"), "")
	add("GITHUB_TOKEN", getenv("GITHUB_TOKEN"), "")
	for _, name := range m.secretEnv {
		if getenv(name) == "" {
			problems = append(problems, fmt.Sprintf("--secret-env %s: the variable is not set, so its secret would not be hidden", name))
			continue
		}
		add("--secret-env "+name, getenv(name), "")
	}
	for _, t := range queue {
		where := fmt.Sprintf("task %q: the credential in its repo URL", t.ID)
		if t.Source.File != "" {
			where = fmt.Sprintf("%s:%d: %s", t.Source.File, t.Source.Line, where)
		}
		for _, s := range redact.URLSecrets(t.Repo) {
			add(where, s, "")
		}
		for _, srv := range t.MCPServers {
			for _, name := range srv.Env {
				add(fmt.Sprintf("task %q: mcp_servers.%s.env %s", t.ID, srv.Name, name), getenv(name), "")
			}
		}
		problems = append(problems, setupSecrets(t, getenv, add)...)
	}
	if len(problems) > 0 {
		return nil, &batch.ConfigError{Problems: problems}
	}
	return values, nil
}

// gitAuth is the token for https remotes.
func gitAuth(getenv func(string) string) gitops.Credentials {
	tok := getenv("RUNNER_GIT_TOKEN")
	if tok == "" {
		tok = getenv("GITHUB_TOKEN")
	}
	return gitops.Credentials{Token: tok}
}

// imageExists adapts Backend.CheckImage to the batch's need.
func imageExists(b sandbox.Backend) func(context.Context, string) (bool, error) {
	return func(ctx context.Context, ref string) (bool, error) {
		err := b.CheckImage(ctx, ref)
		if errors.Is(err, sandbox.ErrImageNotFound) {
			return false, nil
		}
		return err == nil, err
	}
}

// finalReserve maps the flag to agent.Config.FinalReserve, where 0 is the
// default and a negative share none.
func finalReserve(share float64) float64 {
	if share == 0 {
		return -1
	}
	return share
}
